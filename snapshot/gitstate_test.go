package snapshot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// gitView is what a user sees of HEAD, refs, stash and index through git itself.
type gitView struct {
	head, refs, stash, staged string
	index                     []byte
}

func viewGit(t *testing.T, r *testRepo) gitView {
	t.Helper()
	head, _ := tryGit(r.Root, nil, "symbolic-ref", "-q", "HEAD")
	head += " " + r.git("rev-parse", "HEAD")
	idx, _ := os.ReadFile(filepath.Join(r.Root, ".git", "index"))
	return gitView{
		head:   head,
		refs:   r.git("for-each-ref", "--format=%(refname) %(objectname)"),
		stash:  r.git("stash", "list", "--format=%H %gs"),
		staged: r.git("diff", "--cached", "--name-status"),
		index:  idx,
	}
}

func changesJSON(t *testing.T, cs []snapshot.GitChange) string {
	t.Helper()
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// agentGit sets up a repository with a commit, a tag, an earlier stash entry, a staged change and
// an untracked file (the user's work in progress), records the state, runs the agent's git
// commands, and returns the repository, the pre state and the post state.
func agentGit(t *testing.T, cmds ...[]string) (*testRepo, *snapshot.Repo, *snapshot.GitState, *snapshot.GitState, gitView) {
	t.Helper()
	r := newRepo(t)
	r.write("a.txt", "one\n")
	r.commitAll("first")
	r.git("tag", "v1")
	r.write("a.txt", "stashed by the user\n")
	r.git("stash")
	r.write("b.txt", "staged\n")
	r.git("add", "b.txt")
	r.write("c.txt", "untracked\n")
	repo := openRepo(t, r.Root)
	before := viewGit(t, r)
	pre, err := repo.ReadGitState(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		r.git(c...)
	}
	post, err := repo.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	return r, repo, pre, post, before
}

func TestGitStatePutBackCommit(t *testing.T) {
	r, repo, pre, post, before := agentGit(t, []string{"add", "-A"}, []string{"commit", "-qm", "agent"})
	cs := snapshot.DiffGitState(pre, post)
	got := changesJSON(t, cs)
	if !strings.Contains(got, `"ref":"refs/heads/main"`) || !strings.Contains(got, `{"index":"changed"}`) || len(cs) != 2 {
		t.Fatalf("changes = %s", got)
	}
	res, err := repo.PutBackGit(pre, post.Delta(pre), "mulligan: put back")
	if err != nil || len(res.Skipped) != 0 || len(res.Restored) != 2 {
		t.Fatalf("put back: %+v %v", res, err)
	}
	after := viewGit(t, r)
	if after.head != before.head || after.refs != before.refs || after.staged != before.staged || string(after.index) != string(before.index) {
		t.Fatalf("not put back:\nbefore %+v\nafter  %+v", before, after)
	}
	// The reflog says who moved main back.
	if log := r.git("reflog", "-1", "--format=%gs", "refs/heads/main"); log != "mulligan: put back" {
		t.Errorf("reflog: %q", log)
	}
}

func TestGitStatePutBackStashAndBranch(t *testing.T) {
	r, repo, pre, post, before := agentGit(t, []string{"stash", "-u"}, []string{"checkout", "-q", "-b", "agent/work"},
		[]string{"commit", "-q", "--allow-empty", "-m", "agent"}, []string{"stash", "list"})
	cs := snapshot.DiffGitState(pre, post)
	got := changesJSON(t, cs)
	for _, want := range []string{`{"ref":"HEAD","from":"refs/heads/main","to":"refs/heads/agent/work"}`, `"ref":"refs/heads/agent/work","from":null`, `{"stash":"pushed"`, `{"index":"changed"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("changes %s lack %s", got, want)
		}
	}
	res, err := repo.PutBackGit(pre, post.Delta(pre), "mulligan: put back")
	if err != nil || len(res.Skipped) != 0 {
		t.Fatalf("put back: %+v %v", res, err)
	}
	after := viewGit(t, r)
	if after.head != before.head || after.refs != before.refs || after.stash != before.stash || after.staged != before.staged || string(after.index) != string(before.index) {
		t.Fatalf("not put back:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestGitStatePutBackDroppedStash(t *testing.T) {
	r, repo, pre, post, before := agentGit(t, []string{"stash", "drop", "-q"})
	if got := changesJSON(t, snapshot.DiffGitState(pre, post)); !strings.Contains(got, `"stash":"dropped"`) || !strings.Contains(got, `"to":null`) {
		t.Fatalf("changes = %s", got)
	}
	if res, err := repo.PutBackGit(pre, post.Delta(pre), "mulligan: put back"); err != nil || len(res.Skipped) != 0 {
		t.Fatalf("put back: %+v %v", res, err)
	}
	if after := viewGit(t, r); after.stash != before.stash || after.refs != before.refs {
		t.Fatalf("stash not put back: %q, want %q", after.stash, before.stash)
	}
}

// A ref someone else moved after the attempt ended is not overwritten; the rest is put back.
func TestGitStatePutBackCompareAndSwap(t *testing.T) {
	r, repo, pre, post, before := agentGit(t, []string{"commit", "-qm", "agent"}, []string{"branch", "side"})
	r.git("commit", "-q", "--allow-empty", "-m", "the user's own commit, after the attempt")
	user := r.git("rev-parse", "main")
	res, err := repo.PutBackGit(pre, post.Delta(pre), "mulligan: put back")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Change.Ref != "refs/heads/main" || !strings.Contains(res.Skipped[0].Reason, "changed again") {
		t.Fatalf("skipped = %+v", res.Skipped)
	}
	if got := r.git("rev-parse", "main"); got != user {
		t.Fatalf("main overwritten: %s, want %s", got, user)
	}
	if _, err := tryGit(r.Root, nil, "rev-parse", "--verify", "-q", "refs/heads/side"); err == nil {
		t.Errorf("the agent's branch side was not deleted")
	}
	if after := viewGit(t, r); after.stash != before.stash {
		t.Errorf("stash not as before: %q", after.stash)
	}
}

// `git status` refreshing stat data rewrites the index without changing it.
func TestGitStateStatRefreshIsNoChange(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "one\n")
	r.commitAll("first")
	repo := openRepo(t, r.Root)
	pre, err := repo.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	r.write("a.txt", "one\n") // new mtime, same content
	r.git("update-index", "--refresh")
	post, err := repo.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if cs := snapshot.DiffGitState(pre, post); len(cs) != 0 {
		t.Fatalf("changes = %s", changesJSON(t, cs))
	}
}

// Packing refs (an agent's `git gc`) moves them from files to packed-refs: no change.
func TestGitStatePackRefsIsNoChange(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "one\n")
	r.commitAll("first")
	r.git("tag", "v1")
	repo := openRepo(t, r.Root)
	if err := repo.UpdateRef("refs/mulligan/runs/x/base", hash(t, r.git("rev-parse", "HEAD")), plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	pre, err := repo.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pre.Refs["refs/mulligan/runs/x/base"]; ok {
		t.Fatal("mulligan's own refs are not the user's")
	}
	r.git("pack-refs", "--all")
	post, err := repo.ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	if cs := snapshot.DiffGitState(pre, post); len(cs) != 0 {
		t.Fatalf("changes = %s", changesJSON(t, cs))
	}
}

// The index state a Repo that read it before gives is the one a fresh Repo reads (copy kept
// included), and an index git rewrote since is read afresh.
func TestIndexStateFollowsTheIndex(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "one\n")
	r.commitAll("first")
	r.write("b.txt", "staged\n")
	r.git("add", "b.txt")
	repo := openRepo(t, r.Root)
	// read is ReadGitState(true) through repo, and through a Repo that never read anything.
	read := func() (got, fresh snapshot.IndexState) {
		t.Helper()
		for i, rp := range []*snapshot.Repo{repo, openRepo(t, r.Root)} {
			st, err := rp.ReadGitState(true)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				got = st.Index
			} else {
				fresh = st.Index
			}
		}
		return got, fresh
	}
	got, want := read()
	if got != want || got.Sum == "" {
		t.Fatalf("index state %+v, want %+v", got, want)
	}
	copies, err := repo.IndexCopies()
	if err != nil || len(copies) != 1 || copies[0].Sum != got.Sum {
		t.Fatalf("index copies %v, %v; want the one of %s", copies, err, got.Sum)
	}

	r.write("c.txt", "staged after the first read\n")
	r.git("add", "c.txt")
	after, fresh := read()
	if after != fresh || after == got {
		t.Fatalf("index changed after the first read: state %+v, want %+v", after, fresh)
	}
}
