package snapshot

import (
	"encoding/json"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"sort"
	"strings"
)

// Delta returns s reduced to what differs from pre (Partial): the refs that changed, and the
// stash log only when it changed. It is what a caller keeps of an attempt's end state.
func (s *GitState) Delta(pre *GitState) *GitState {
	d := *s
	d.Partial = true
	d.Refs = map[string]string{}
	for _, n := range changedRefs(pre, s) {
		d.Refs[n] = s.Refs[n]
	}
	if d.StashLogSum == pre.StashLogSum {
		d.StashLog = ""
	}
	return &d
}

// changedRefs lists the refs whose value differs between pre (complete) and post (complete or
// Partial), sorted.
func changedRefs(pre, post *GitState) []string {
	var names []string
	if post.Partial {
		for n, v := range post.Refs {
			if pre.Refs[n] != v {
				names = append(names, n)
			}
		}
	} else {
		for n, v := range post.Refs {
			if pre.Refs[n] != v {
				names = append(names, n)
			}
		}
		for n := range pre.Refs {
			if _, ok := post.Refs[n]; !ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// GitChange is one thing an attempt changed outside the working tree. Its JSON is one of
// {"ref": NAME, "from": V, "to": V} (HEAD's from/to are its symbolic target or commit; a
// created ref has from null, a deleted one to null), {"index": "changed"} and
// {"stash": "pushed"|"dropped"|"changed", "from": V, "to": V}.
type GitChange struct {
	Ref   string // a ref, "HEAD" included
	Index bool
	Stash string
	Op    string // how the git operations in progress changed (OpState sums in From and To)
	From  string // "" absent
	To    string
}

func (c GitChange) String() string {
	switch {
	case c.Op != "":
		return c.Op
	case c.Index:
		return "the index changed"
	case c.Stash != "":
		return "stash " + c.Stash
	case c.From == "":
		return c.Ref + " created at " + short(c.To)
	case c.To == "":
		return c.Ref + " deleted (was " + short(c.From) + ")"
	}
	return c.Ref + " " + short(c.From) + " → " + short(c.To)
}

// short abbreviates an object id as git does; a ref name stays whole.
func short(v string) string {
	if _, ok := odb.ParseHash(v); ok {
		return v[:7]
	}
	return v
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes the change in the shape of `show -o json`'s git_changes.
func (c GitChange) MarshalJSON() ([]byte, error) {
	switch {
	case c.Op != "":
		return json.Marshal(struct {
			Op   string  `json:"op"`
			From *string `json:"from"`
			To   *string `json:"to"`
		}{c.Op, nullStr(c.From), nullStr(c.To)})
	case c.Index:
		return []byte(`{"index":"changed"}`), nil
	case c.Stash != "":
		return json.Marshal(struct {
			Stash string  `json:"stash"`
			From  *string `json:"from"`
			To    *string `json:"to"`
		}{c.Stash, nullStr(c.From), nullStr(c.To)})
	}
	return json.Marshal(struct {
		Ref  string  `json:"ref"`
		From *string `json:"from"`
		To   *string `json:"to"`
	}{c.Ref, nullStr(c.From), nullStr(c.To)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *GitChange) UnmarshalJSON(b []byte) error {
	var j struct {
		Ref   string  `json:"ref"`
		Index string  `json:"index"`
		Stash string  `json:"stash"`
		Op    string  `json:"op"`
		From  *string `json:"from"`
		To    *string `json:"to"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = GitChange{Ref: j.Ref, Index: j.Index != "", Stash: j.Stash, Op: j.Op}
	if j.From != nil {
		c.From = *j.From
	}
	if j.To != nil {
		c.To = *j.To
	}
	return nil
}

// DiffGitState lists what changed from pre to post (post may be Partial): HEAD first, then the
// refs by name, the stash, the index, the operations in progress.
func DiffGitState(pre, post *GitState) []GitChange {
	var out []GitChange
	if pre.Head.Target != post.Head.Target || (pre.Head.Target == "" && pre.Head.Commit != post.Head.Commit) {
		out = append(out, GitChange{Ref: "HEAD", From: headValue(pre.Head), To: headValue(post.Head)})
	}
	for _, n := range changedRefs(pre, post) {
		if n == stashRef {
			continue
		}
		out = append(out, GitChange{Ref: n, From: pre.Refs[n], To: post.Refs[n]})
	}
	if to := post.ref(pre, stashRef); pre.Refs[stashRef] != to || pre.StashLogSum != post.StashLogSum {
		c := GitChange{Stash: "changed", From: pre.Refs[stashRef], To: to}
		pn, qn := logLines(pre), logLines(post)
		switch {
		case pn >= 0 && qn > pn:
			c.Stash = "pushed"
		case qn >= 0 && pn > qn:
			c.Stash = "dropped"
		}
		out = append(out, c)
	}
	if pre.Index.Entries != post.Index.Entries {
		out = append(out, GitChange{Index: true, From: pre.Index.Sum, To: post.Index.Sum})
	}
	if pre.Ops.Sum != post.Ops.Sum {
		out = append(out, GitChange{Op: opsChange(pre.Ops, post.Ops), From: pre.Ops.Sum, To: post.Ops.Sum})
	}
	return out
}

// ref is the value of ref name in s, read from pre when s is Partial and does not list it.
func (s *GitState) ref(pre *GitState, name string) string {
	if v, ok := s.Refs[name]; ok || !s.Partial {
		return v
	}
	return pre.Refs[name]
}

// headValue is HEAD as a change shows it: its symbolic target, or the detached commit.
func headValue(h HeadState) string {
	if h.Target != "" {
		return h.Target
	}
	return h.Commit
}

// logLines counts the entries of a state's stash log, -1 when unknown (too long to keep).
func logLines(s *GitState) int {
	if s.StashLogSum != "" && s.StashLog == "" {
		return -1
	}
	return strings.Count(s.StashLog, "\n")
}
