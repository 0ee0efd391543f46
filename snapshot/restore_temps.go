package snapshot

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A restore writes each file to a temporary file (.mulligan-restore-<pid>-<n>) in the file's
// directory and renames it into place. Killed half-way (SIGKILL, a crash), it leaves that
// temporary file behind, where `git status` shows it. So before it writes anything a restore
// notes, in <git-dir>/mulligan/restoring-<pid>, the directories it will write into; it removes
// the note when it is done. Open (every command) finds the notes of processes that are gone and
// removes their temporary files from those directories, then the note.

func restoringNote(gitDir string, pid int) string {
	return filepath.Join(gitDir, "mulligan", "restoring-"+strconv.Itoa(pid))
}

// noteRestoring writes the note for paths (the files about to be written) and returns the
// function that removes it.
func (r *Repo) noteRestoring(paths []string) (func(), error) {
	seen := map[string]bool{}
	var b strings.Builder
	for _, p := range paths {
		dir, _ := splitPath(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		b.WriteString(strconv.Quote(dir))
		b.WriteByte('\n')
	}
	note := restoringNote(r.gitDir, os.Getpid())
	if err := os.MkdirAll(filepath.Dir(note), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(note, []byte(b.String()), 0o600); err != nil {
		os.Remove(note)
		return nil, err
	}
	return func() { os.Remove(note) }, nil
}

// sweepRestoreTemps removes what killed restores left (see above). Best effort: a directory
// that is gone or a path that became a symbolic link is skipped.
func sweepRestoreTemps(root, gitDir string) {
	notes, _ := filepath.Glob(filepath.Join(gitDir, "mulligan", "restoring-*"))
	for _, note := range notes {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(note), "restoring-"))
		// (EPERM: the process exists, someone else's)
		if err != nil || pid <= 0 || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		f, err := os.Open(note)
		if err != nil {
			continue
		}
		prefix := tmpPrefix + strconv.Itoa(pid) + "-"
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			dir, err := strconv.Unquote(sc.Text())
			if err != nil {
				continue
			}
			removeTemps(root, dir, prefix)
		}
		f.Close()
		os.Remove(note)
	}
}

func removeTemps(root, dir, prefix string) {
	fd, err := openDirNoFollow(root, dir)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	s := &scratch{dents: make([]byte, 32<<10)}
	if readDirents(fd, s) != nil {
		return
	}
	for _, nr := range s.names {
		name := s.name(nr)
		if strings.HasPrefix(string(name), prefix) && isRestoreTemp(name) {
			unix.Unlinkat(fd, string(name), 0)
		}
	}
}
