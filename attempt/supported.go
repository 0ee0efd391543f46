package attempt

import "fmt"

// CheckSupported refuses a task file that uses keys this version of the runner does not act on
// yet, rather than ignoring them: a verify gate or a side-effect declaration that silently does
// nothing is worse than an error. Each check goes when its feature lands.
func CheckSupported(f *File) error {
	var errs AuthoringErrors
	add := func(t *Task, key string) {
		errs = append(errs, &AuthoringError{File: f.Path, Line: t.Pos.Line, Col: t.Pos.Col,
			Msg:  fmt.Sprintf("task %s: `%s` is not supported by this version of mulligan yet", t.ID, key),
			Hint: "remove it, or check `mulligan version` against the release notes"})
	}
	for _, t := range f.Tasks {
		if t.ID == "base" {
			// refs/mulligan/runs/<run>/base is the run's base snapshot; a task of that name would
			// need refs/mulligan/runs/<run>/base/<n>/pre beside it, which git cannot store.
			errs = append(errs, &AuthoringError{File: f.Path, Line: t.Pos.Line, Col: t.Pos.Col,
				Msg: "task id `base` is reserved (refs/mulligan/runs/<run>/base is the run's base snapshot)", Hint: "rename the task"})
		}
		if len(t.Hooks) > 0 {
			add(t, "hooks")
		}
	}
	if len(f.Hooks) > 0 {
		errs = append(errs, &AuthoringError{File: f.Path, Line: 1, Col: 1, Msg: "`hooks` are not supported by this version of mulligan yet"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
