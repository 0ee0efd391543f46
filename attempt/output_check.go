package attempt

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// attemptUsage sums what the agent CLI reported for one attempt (its correction calls included).
type attemptUsage struct {
	in, out *int64
	usd     *float64
	session string // the CLI's conversation id, the last one reported
}

func (u *attemptUsage) add(p *agentcli.Preset, stdout []byte) {
	if p == nil || p.Result == nil {
		return
	}
	if id := agentcli.AgentSession(p.Name, stdout); id != "" {
		u.session = id
	}
	r := p.Result(stdout)
	if r == nil {
		return
	}
	if r.TokensIn != nil {
		u.in = store.Ptr(deref(u.in) + *r.TokensIn)
	}
	if r.TokensOut != nil {
		u.out = store.Ptr(deref(u.out) + *r.TokensOut)
	}
	if r.CostUSD != nil {
		c := *r.CostUSD
		if u.usd != nil {
			c += *u.usd
		}
		u.usd = &c
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (u *attemptUsage) cost() float64 {
	if u.usd == nil {
		return 0
	}
	return *u.usd
}

// VerifyLogPath is where the verify command's output of the attempt logged at log goes.
func VerifyLogPath(log string) string {
	return strings.TrimSuffix(log, ".log") + ".verify.log"
}

// outputCheck runs the checks of an attempt whose agent exited 0: payload_declared (preset error
// flag, result contract, empty output), output_schema with its correction calls, and verify
// (which the runner calls after it has taken the post tree).
type outputCheck struct {
	r          *runner
	ctx        context.Context
	def        *taskfile.Task
	t          *store.Task
	n          int
	preset     *agentcli.Preset
	rules      agentcli.PresetRules
	spec       proc.Spec
	prepare    func(prompt, promptFile string) ([]string, []string, error)
	prompt     string
	dir        string
	outputFile string
	log        io.Writer
	usage      *attemptUsage
	deadlineAt time.Time // the task's deadline (zero: none), which bounds verify too

	retries int // schema correction calls made
}

// run checks the output of an agent that exited 0: the result contract, then the schema with its
// correction calls (the agent again, so still part of the tree the attempt leaves). verify is
// separate: it runs after the post tree is taken.
func (c *outputCheck) run(stdout []byte) *agentcli.Failure {
	out := agentcli.ReadOutput(c.outputFile, stdout, c.preset)
	if len(out.Others) > 0 {
		names := make([]string, len(out.Others))
		for i, o := range out.Others {
			names[i] = o.String()
		}
		c.r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: c.t.ID,
			Message: fmt.Sprintf("%s refused %s; %s", c.preset.Name, strings.Join(names, ", "), c.preset.GrantFor(out.Others))})
	}
	if f := agentcli.CheckPayload(c.def, c.preset, out); f != nil {
		if f.Code == agentcli.CodePermissionDenied && f.Hint != "" {
			// The one flag the user has to change: on the terminal, not only in show.
			c.r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: c.t.ID, Message: f.Message + "; " + f.Hint})
		}
		return f
	}
	if c.def.OutputSchema != "" {
		return c.schema(out)
	}
	return nil
}

func (c *outputCheck) schema(out agentcli.AttemptOutput) *agentcli.Failure {
	sch, err := CompileSchema(c.r.env.Repo.Root(), c.def.OutputSchema)
	if err != nil {
		return &agentcli.Failure{Class: taskfile.ClassSchemaInvalid, Code: "schema_unreadable", Message: err.Error(),
			Hint: "fix output_schema in the task file (a path from the working tree root to a JSON Schema)"}
	}
	errs := sch.Check(out.Raw)
	for errs != "" && c.retries < c.def.MaxSchemaRetries {
		c.retries++
		c.r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: c.t.ID,
			Message: fmt.Sprintf("output does not match %s: correction call %d of %d", c.def.OutputSchema, c.retries, c.def.MaxSchemaRetries)})
		stdout, f := c.correct(out.Raw, errs)
		if f != nil {
			return f
		}
		out = agentcli.ReadOutput(c.outputFile, stdout, c.preset)
		errs = sch.Check(out.Raw)
	}
	if errs == "" {
		return nil
	}
	return &agentcli.Failure{Class: taskfile.ClassSchemaInvalid, Code: agentcli.CodeSchemaInvalid,
		Message: fmt.Sprintf("the output does not match %s after %d correction call(s): %s", c.def.OutputSchema, c.retries, oneLine(lastErrorLine(errs))),
		Hint:    "mulligan logs shows the output; the schema errors were sent back to the agent each time"}
}

// lastErrorLine is the most specific line of a validator's message (its last).
func lastErrorLine(errs string) string {
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// correct makes one schema correction call: the same agent, the prompt with the validation
// errors, output appended to the attempt's log. A failing call is classified like an attempt.
func (c *outputCheck) correct(raw []byte, errs string) ([]byte, *agentcli.Failure) {
	prompt := CorrectionPrompt(c.prompt, c.def.OutputSchema, raw, errs)
	pf := filepath.Join(c.dir, strconv.Itoa(c.n)+".correction-"+strconv.Itoa(c.retries)+".prompt")
	if err := os.WriteFile(pf, []byte(prompt), 0o600); err != nil {
		return nil, &agentcli.Failure{Class: taskfile.ClassInternal, Code: agentcli.CodeInternal, Message: err.Error()}
	}
	argv, envv, err := c.prepare(prompt, pf)
	if err != nil {
		return nil, &agentcli.Failure{Class: taskfile.ClassInternal, Code: agentcli.CodeInternal, Message: err.Error()}
	}
	os.Remove(c.outputFile)
	fmt.Fprintf(c.log, "\n--- mulligan: schema correction call %d of %d ---\n", c.retries, c.def.MaxSchemaRetries)
	spec := c.spec
	spec.Argv, spec.Env = argv, envv
	pr := proc.Run(c.ctx, spec)
	c.usage.add(c.preset, pr.Stdout)
	obs := agentcli.Observation{Cancelled: pr.Cancelled || pr.Killed, TimedOut: pr.TimedOut, Silent: pr.Silent,
		StartErr: pr.StartErr, ExitCode: pr.ExitCode, Output: pr.Tail}
	if f := agentcli.Classify(obs, c.def.Classify, c.rules); f != nil {
		return nil, f
	}
	if o := agentcli.ReadOutput("", pr.Stdout, c.preset); o.Result != nil && o.Result.IsError {
		return nil, agentcli.CheckPayload(c.def, c.preset, o)
	}
	return pr.Stdout, nil
}

// verify runs the task's verify command on the tree the agent left.
func (c *outputCheck) verify() *agentcli.Failure {
	v := c.def.Verify
	logPath := filepath.Join(c.dir, strconv.Itoa(c.n)+".log")
	vf, err := os.OpenFile(VerifyLogPath(logPath), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return &agentcli.Failure{Class: taskfile.ClassInternal, Code: agentcli.CodeInternal, Message: err.Error()}
	}
	defer vf.Close()
	cmd := strings.Join(v.Command, " ")
	c.r.env.Progress.Event(ProgressEvent{Kind: KindVerify, Task: c.t.ID, Message: cmd})
	env := append(append([]string{}, c.r.env.Environ...),
		"MULLIGAN_RUN="+c.r.run.ID, "MULLIGAN_TASK="+c.t.ID, "MULLIGAN_ATTEMPT="+strconv.Itoa(c.n))
	env = append(env, c.r.laneEnv()...)
	var left time.Duration // what remains of the task's deadline
	if !c.deadlineAt.IsZero() {
		left = max(c.deadlineAt.Sub(c.r.env.Now()), time.Millisecond)
	}
	res := RunVerify(c.ctx, c.def, left, c.r.env.Repo.Root(), env, c.r.env.Grace, vf, c.r.killCh)
	if res.Failure != nil {
		fmt.Fprintf(c.log, "\n--- mulligan: %s (its output: %s) ---\n", res.Failure.Message, VerifyLogPath(logPath))
	}
	return res.Failure
}
