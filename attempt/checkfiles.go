package attempt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// CheckFiles checks the files the tasks name, relative to the working tree root: a
// prompt_file must exist and hold a prompt (not only blanks: an empty prompt would be sent as
// is, and a retry would "succeed" doing nothing), and an output_schema must exist and compile.
// Each problem is an authoring error at the value's position, found before anything runs.
func CheckFiles(f *taskfile.File, root string) error {
	var errs taskfile.AuthoringErrors
	at := func(p taskfile.Pos, hint, format string, args ...any) {
		errs = append(errs, &taskfile.AuthoringError{File: f.Path, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...), Hint: hint})
	}
	for _, t := range f.Tasks {
		if t.PromptFile != "" {
			p := t.PromptFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			data, err := os.ReadFile(p)
			switch {
			case errors.Is(err, os.ErrNotExist):
				at(t.PromptFilePos, "write the prompt there, or fix the path (relative to the working tree root "+root+")", "task `%s`: prompt_file %s does not exist", t.ID, t.PromptFile)
			case err != nil:
				at(t.PromptFilePos, "", "task `%s`: prompt_file %s cannot be read: %v", t.ID, t.PromptFile, unwrapPath(err))
			case strings.TrimSpace(string(data)) == "":
				at(t.PromptFilePos, "write the task's prompt in it (or use prompt: \"\" for a task that takes none)", "task `%s`: prompt_file %s is empty", t.ID, t.PromptFile)
			case !utf8.Valid(data):
				at(t.PromptFilePos, "", "task `%s`: prompt_file %s is not valid UTF-8", t.ID, t.PromptFile)
			}
		}
		if t.OutputSchema != "" {
			p := t.OutputSchema
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				at(t.OutputSchemaPos, "write the JSON Schema there, or fix the path (relative to the working tree root "+root+")", "task `%s`: output_schema %s does not exist", t.ID, t.OutputSchema)
			} else if _, err := CompileSchema(root, t.OutputSchema); err != nil {
				at(t.OutputSchemaPos, "fix the schema: it must be a valid JSON Schema", "task `%s`: %v", t.ID, err)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
