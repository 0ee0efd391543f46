package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// Output-check failure codes.
const (
	CodeIsError        = "is_error"
	CodeResultContract = "result_contract"
	CodeEmptyOutput    = "empty_output"
	CodeNoResult       = "no_result"
	CodeSchemaInvalid  = "schema_invalid"
	CodeNoJSON         = "no_json"
	CodeVerifyFailed   = "verify_failed"
	CodeVerifyTimeout  = "verify_timeout"
	CodeMaxCost        = "max_cost"
	CodeRunMaxCost     = "run_max_cost"
)

// AttemptOutput is the agent's final output as the checks read it (SPEC §4 Schema): the file it
// wrote to $MULLIGAN_OUTPUT_FILE, else the preset's result field, else the last JSON value on
// stdout.
type AttemptOutput struct {
	Raw    []byte // the bytes the checks judge (may be empty)
	Source string // "output_file", "result", "stdout", or "" when there is none
	Result *AgentResult
	// Refused is the failure of edits the CLI refused (nil: none); Others are the other tool
	// calls it refused, for the operator to be told.
	Refused *Failure
	Others  []Refusal
}

// ReadOutput picks the attempt's output.
func ReadOutput(outputFile string, stdout []byte, p *Preset) AttemptOutput {
	var o AttemptOutput
	if p != nil && p.Result != nil {
		o.Result = p.Result(stdout)
	}
	if p != nil {
		o.Refused, o.Others = p.RefusalFailure(stdout)
	}
	if outputFile != "" {
		if b, err := os.ReadFile(outputFile); err == nil {
			o.Raw, o.Source = b, "output_file"
			return o
		}
	}
	if o.Result != nil && o.Result.HasText {
		o.Raw, o.Source = []byte(o.Result.Text), "result"
		return o
	}
	if v := lastJSONValue(stdout); v != nil {
		o.Raw, o.Source = v, "stdout"
	} else if len(bytes.TrimSpace(stdout)) > 0 {
		o.Raw, o.Source = stdout, "stdout"
	}
	return o
}

// lastJSONValue returns the last complete top-level JSON object or array in b, or nil.
func lastJSONValue(b []byte) []byte {
	var last []byte
	scanJSON(b, "{[", func(raw []byte) { last = raw })
	return last
}

// DecodeJSON reads raw as one JSON value, also when it is wrapped in text or a ``` fence (an
// agent's result field often is).
func DecodeJSON(raw []byte) (any, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(t, &v); err == nil {
		return v, true
	}
	if inner := lastJSONValue(t); inner != nil {
		if err := json.Unmarshal(inner, &v); err == nil {
			return v, true
		}
	}
	return nil, false
}

// expectsResult reports whether an exit 0 without output is a failure: the preset prints a
// result object, or the task declares a contract or a schema.
func expectsResult(def *taskfile.Task, p *Preset) bool {
	return (p != nil && p.Result != nil && p.Name != taskfile.PresetAider) || def.ResultContract != nil || def.OutputSchema != ""
}

// CheckPayload applies the payload_declared checks to an exit-0 attempt: the preset's error flag,
// edits the CLI refused, the result contract, empty output where a result is expected; and a
// stream the CLI left before its closing event (agent_exit). nil: the payload is fine.
func CheckPayload(def *taskfile.Task, p *Preset, o AttemptOutput) *Failure {
	if o.Result != nil && o.Result.IsError {
		msg := strings.TrimSpace(o.Result.ErrorText)
		if msg == "" {
			msg = "the agent's result declares an error"
		}
		return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeIsError, Message: p.Name + ": " + clipLine([]byte(msg))}
	}
	if o.Refused != nil {
		f := *o.Refused
		return &f
	}
	if r := o.Result; r != nil && r.Unfinished != "" && o.Source != "output_file" {
		// Whatever else it printed (its prompt's echo, a tool call), there is no answer. The
		// output declares nothing: the CLI ended before its stream did (claude drops its result
		// event at random, anthropics/claude-code#8126 and #1920), so it is the agent's
		// failure, retried as agent_exit is, and a repeat of it still meets the no-progress rule.
		msg := fmt.Sprintf("%s exited 0 without an answer: its output ends before the %s event", p.Name, r.Unfinished)
		if s := strings.TrimSpace(r.ErrorText); s != "" {
			msg += ": " + clipLine([]byte(s))
		}
		return &Failure{Class: taskfile.ClassAgentExit, Code: CodeNoResult, Message: msg,
			Hint: "the CLI ended its session before it answered (it crashed or its stream was cut): under on_failure: retry the next attempt asks again; read the CLI's log if it repeats"}
	}
	if len(bytes.TrimSpace(o.Raw)) == 0 {
		if expectsResult(def, p) {
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeEmptyOutput,
				Message: "the agent exited 0 but its result is empty",
				Hint:    "an agent that does nothing and says nothing is not a success; check its command and prompt"}
		}
		return nil
	}
	if rc := def.ResultContract; rc != nil {
		v, ok := DecodeJSON(o.Raw)
		if !ok {
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeResultContract,
				Message: "the result_contract needs a JSON result, and the output holds none"}
		}
		if fv, has := dotted(v, rc.FailureField); has && truthy(fv) {
			msg := "the result declares failure (" + rc.FailureField + ")"
			if rc.MessageField != "" {
				if mv, ok := dotted(v, rc.MessageField); ok {
					msg += ": " + clipLine([]byte(fmt.Sprint(mv)))
				}
			} else if s, ok := fv.(string); ok {
				msg += ": " + clipLine([]byte(s))
			}
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeResultContract, Message: msg}
		}
	}
	return nil
}

func dotted(v any, p string) (any, bool) {
	if p == "" {
		return nil, false
	}
	for _, k := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		return x.String() != "0"
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
