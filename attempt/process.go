package attempt

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// agentGroups finds, through /proc, the process groups of the agents of run that are still
// alive, by attempt ("TASK@N"): processes whose environment has the attempt's MULLIGAN_RUN,
// MULLIGAN_TASK and MULLIGAN_ATTEMPT, and MULLIGAN_PROMPT_FILE, which only an attempt's
// processes get (hooks and compensations get the others too). It is the fallback for an
// attempt whose runner died before it recorded the group; elsewhere than Linux it finds nothing.
func agentGroups(run string) map[string][]int {
	out := map[string][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	ownGroup := syscall.Getpgrp()
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + ent.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte("MULLIGAN_RUN="+run+"\x00")) {
			continue
		}
		vars := map[string]string{}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok && strings.HasPrefix(k, "MULLIGAN_") {
				vars[k] = v
			}
		}
		if vars["MULLIGAN_RUN"] != run || vars["MULLIGAN_PROMPT_FILE"] == "" || vars["MULLIGAN_TASK"] == "" {
			continue
		}
		pg, err := syscall.Getpgid(pid)
		if err != nil || pg <= 1 || pg == ownGroup {
			continue
		}
		k := vars["MULLIGAN_TASK"] + "@" + vars["MULLIGAN_ATTEMPT"]
		if !slices.Contains(out[k], pg) {
			out[k] = append(out[k], pg)
		}
	}
	return out
}
