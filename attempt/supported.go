package attempt

import "github.com/mulligan-dev/mulligan/taskfile"

// CheckSupported refuses a task file that this version of the runner cannot carry out as
// written, rather than ignoring what it cannot do: today, a task named `base`.
func CheckSupported(f *taskfile.File) error {
	var errs taskfile.AuthoringErrors
	for _, t := range f.Tasks {
		if t.ID == "base" {
			// refs/mulligan/runs/<run>/base is the run's base snapshot; a task of that name would
			// need refs/mulligan/runs/<run>/base/<n>/pre beside it, which git cannot store.
			errs = append(errs, &taskfile.AuthoringError{File: f.Path, Line: t.Pos.Line, Col: t.Pos.Col,
				Msg: "task id `base` is reserved (refs/mulligan/runs/<run>/base is the run's base snapshot)", Hint: "rename the task"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
