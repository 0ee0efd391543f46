package autopsy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

type storeAttempt = store.Attempt

// The commands a suggestion names are built here, from the run, and only from commands this
// build of mulligan has (Input.Commands): a suggestion that does not parse is worse than none.

// retry is the command that tries the decisive task again: retry-task where it exists, else a
// new run of the task.
func (f *facts) retry() string {
	if f.commands["retry-task"] && f.task != nil {
		return fmt.Sprintf("mulligan retry-task %s %s", f.run.ID, f.task.ID)
	}
	return f.rerun()
}

// rerun starts a new run of the decisive task from the same task file (after it was fixed), or
// the same ad-hoc command.
func (f *facts) rerun() string {
	if f.adHoc() {
		args := []string{"mulligan", "run"}
		t := f.def
		if t.OnFailure != "" && t.OnFailure != "fail" {
			args = append(args, "--on-failure", t.OnFailure)
			if t.OnFailure == "retry" {
				args = append(args, "--retries", fmt.Sprint(t.Retries))
			}
		}
		if t.Timeout > 0 {
			args = append(args, "--timeout", t.Timeout.String())
		}
		if t.Heartbeat > 0 {
			args = append(args, "--heartbeat", t.Heartbeat.String())
		}
		args = append(args, "--")
		for _, a := range f.file.Agents[t.Agents[0]].Command {
			args = append(args, shellQuote(a))
		}
		return strings.Join(args, " ")
	}
	cmd := "mulligan run"
	if tf := f.run.TaskFile; tf != "" && tf != "mulligan.yaml" {
		cmd += " -f " + shellQuote(f.taskFilePath())
	}
	if f.task != nil {
		cmd += " " + shellQuote(f.task.ID)
	}
	return cmd
}

// taskFilePath names the run's task file as it can be passed to -f from the working tree root:
// the stored path is relative to where the run was started.
func (f *facts) taskFilePath() string {
	tf := f.run.TaskFile
	if filepath.IsAbs(tf) {
		if rel, err := filepath.Rel(f.run.Worktree, tf); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return tf
}

// adHoc reports whether the run is `mulligan run -- CMD`: one task main on agent main, from
// no file.
func (f *facts) adHoc() bool {
	return f.file != nil && f.def != nil && (f.run.TaskFile == "" || strings.HasPrefix(f.run.TaskFile, "(")) &&
		len(f.def.Agents) > 0 && f.file.Agents[f.def.Agents[0]] != nil
}

func (f *facts) fileName() string {
	if f.adHoc() {
		return "the command's flags"
	}
	if f.run.TaskFile == "" {
		return "the task file"
	}
	return f.run.TaskFile
}

func (f *facts) logs(a storeAttempt) string {
	return fmt.Sprintf("mulligan logs %s/%s@%d", f.run.ID, a.TaskID, a.N)
}

// keep is the command that puts an attempt's tree into the working tree.
func (f *facts) keep(a storeAttempt) string {
	if f.commands["revert"] {
		return fmt.Sprintf("mulligan revert %s/%s@%d", f.run.ID, a.TaskID, a.N)
	}
	return "mulligan restore " + a.Ref
}

// best is the attempt worth keeping: the last failed one that changed files and has a ref.
func (f *facts) best() (storeAttempt, bool) {
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		if a.Ref != "" && a.FilesChanged != nil && *a.FilesChanged > 0 {
			return a, true
		}
	}
	return storeAttempt{}, false
}

// retryKeeping suggests another attempt, and how to keep the best attempt's edits instead.
func (f *facts) retryKeeping(why string) Suggestion {
	s := Suggestion{Text: why + ": run the task again", Commands: []string{f.retry()}}
	if a, ok := f.best(); ok {
		s.Text += fmt.Sprintf(", or keep the edits of attempt %d (%d file(s) changed)", a.N, *a.FilesChanged)
		s.Commands = append(s.Commands, f.keep(a))
	}
	return s
}

// inspect is the suggestion when the autopsy cannot say more: look at the run and the output.
func (f *facts) inspect(why string) Suggestion {
	s := Suggestion{Text: why, Commands: []string{"mulligan show " + f.run.ID}}
	if len(f.failed) > 0 {
		s.Commands = append(s.Commands, f.logs(f.last()))
	}
	return s
}

// login is the command that logs an agent's CLI in, by preset, and the sentence around it.
func (f *facts) login(agentName string) (cmd, text string) {
	preset := ""
	if a := f.agent(agentName); a != nil {
		preset = a.Preset
	}
	switch preset {
	case taskfile.PresetClaude:
		return "claude /login", "log claude in again (or set a valid ANTHROPIC_API_KEY)"
	case taskfile.PresetCodex:
		return "codex login", "log codex in again (or set a valid OPENAI_API_KEY)"
	case taskfile.PresetGemini:
		return "", "log gemini in again (run `gemini` and choose a sign-in method, or set a valid GEMINI_API_KEY)"
	case taskfile.PresetOpencode:
		return "opencode auth login", "log opencode in again"
	case taskfile.PresetAider:
		return "", "set a valid API key for aider's model (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY)"
	}
	return "", fmt.Sprintf("log agent %s in again or give it a valid key", agentName)
}

func (f *facts) agent(name string) *taskfile.Agent {
	if f.file == nil {
		return nil
	}
	return f.file.Agents[name]
}

func (f *facts) argv0(agentName string) string {
	if a := f.agent(agentName); a != nil && len(a.Command) > 0 {
		return a.Command[0]
	}
	return ""
}

func (f *facts) verifyArgv0() string {
	if f.def != nil && f.def.Verify != nil && len(f.def.Verify.Command) > 0 {
		return f.def.Verify.Command[0]
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
