package autopsy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
)

// The prompt asks for requirements that cannot hold together: a dependency resolver proves
// that the versions the prompt names conflict, and the agent did as told every time (it says
// so, or it failed the same way each time). No attempt can pass; the prompt must choose.

// resolverConflictRe: a dependency resolver's proof that the requirements have no solution
// (uv, poetry and pub's PubGrub, pip, npm, cargo, Maven, Composer).
var resolverConflictRe = lazyre.New(`(?i)no solution found when resolving|requirements are unsatisfiable|ResolutionImpossible|because these package versions have conflicting dependencies|version solving failed|ERESOLVE (?:unable to resolve|could not resolve)|failed to select a version for|Your requirements could not be resolved to an installable set|SolverProblemError`)

// pinRe: a package named with a version constraint ("pandas==2.2.2", "numpy>=1.26.0",
// "react@^17.0.0", "serde = \"1.0\"").
var pinRe = lazyre.New(`(?:^|[\s'"(\x60,])(@?[A-Za-z][\w.-]*(?:/[\w.-]+)?)\s*(?:==|>=|<=|~=|!=|\^|~|<|>|@[\^~<>=]*|\s=\s"?)\s*v?\d`)

// promptConflict is the resolver's line and the packages of the prompt it says conflict, when
// every rejected attempt ended on that proof.
func (f *facts) promptConflict() (string, []string, bool) {
	as, _ := f.qualityViews()
	if f.def == nil || len(as) == 0 || f.last().Class != cQuality {
		return "", nil, false
	}
	prompt := strings.ToLower(f.def.Prompt)
	var line string
	var names []string
	for _, a := range as {
		text := f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message
		ls := evidence.Lines(text)
		i := slices.IndexFunc(ls, resolverConflictRe.MatchString)
		if i < 0 {
			return "", nil, false
		}
		names = names[:0]
		for _, l := range ls[max(0, i-12):min(len(ls), i+12)] {
			for _, m := range pinRe.FindAllStringSubmatch(l, -1) {
				n := strings.ToLower(strings.TrimRight(m[1], ".-"))
				if len(n) >= 2 && !slices.Contains(names, n) && hasWord(prompt, n) {
					names = append(names, n)
				}
			}
		}
		if len(names) < 2 {
			return "", nil, false
		}
		line = clip(strings.TrimSpace(ls[i]))
	}
	if len(as) < 2 && f.saidContradict() == "" {
		return "", nil, false // one attempt, and the agent did not say it cannot be done
	}
	return line, names, true
}

// hasWord: text holds name as a word of its own (letters, digits, '_' and '-' do not border it).
func hasWord(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		before, after := byte(' '), byte(' ')
		if j > 0 {
			before = text[j-1]
		}
		if e := j + len(name); e < len(text) {
			after = text[e]
		}
		if !isWordByte(before) && !isWordByte(after) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

var promptConflictRule = Rule{
	Name: "prompt-asks-conflicting-versions", Category: WorkflowBug, Confidence: 0.83,
	Match: func(f *facts) bool { _, _, ok := f.promptConflict(); return ok },
	Why: func(f *facts) string {
		l, names, _ := f.promptConflict()
		why := fmt.Sprintf("the dependency resolver proves that the versions the prompt asks for (%s) cannot hold together, after every attempt: %s", strings.Join(names, ", "), l)
		if s := f.saidContradict(); s != "" {
			why += "; the agent said so: " + s
		}
		return why
	},
	Suggest: func(f *facts) Suggestion {
		_, names, _ := f.promptConflict()
		return Suggestion{Text: fmt.Sprintf("choose which of %s gives way (relax one pin or keep the other version) in the prompt of task %s in %s, then run the task again",
			strings.Join(names, " and "), f.task.ID, f.fileName()), Commands: []string{f.fixed()}}
	},
	Lines: func(f *facts) []string {
		l, _, _ := f.promptConflict()
		return []string{l, f.saidContradict()}
	},
}

// The prompt keeps the agent to one module ("Only change billing-core") and the verify fails in
// another one the attempts did not touch, in its build rather than its tests: the verify checks
// what the task may not change.

// onlyScopeRe: the prompt limits the change to one place.
var onlyScopeRe = lazyre.New("(?i)\\bonly (?:change|touch|edit|modify)\\s+(?:files (?:in|under)\\s+|code in\\s+|the\\s+)?`?([\\w./@-]+?)`?(?:[.,;:)]|\\s|$)")

// failedModuleRe: a build naming the module it failed in (Maven, Gradle, pnpm, turbo, cargo).
var failedModuleRe = lazyre.New("Failed to execute goal .* on project ([\\w.-]+)|Execution failed for task ':([\\w-]+):|ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL\\s+(@?[\\w./-]+?)@|^(@?[\\w./-]+)#[\\w:-]+: command .*exited \\(\\d+\\)|error: could not compile `([\\w-]+)`")

// outsideScope is the module the verify failed in and the one the prompt allows, when they
// differ and no attempt touched the failing one.
func (f *facts) outsideScope() (failed, scope string, ok bool) {
	as, vs := f.qualityViews()
	if f.def == nil || len(as) == 0 || f.last().Class != cQuality {
		return "", "", false
	}
	said := false // the prompt says "only"
	if m := onlyScopeRe.FindStringSubmatch(f.def.Prompt); m != nil {
		scope, said = strings.ToLower(strings.Trim(m[1], "./")), true
	} else if scope = f.promptModule(as[len(as)-1]); scope == "" {
		return "", "", false
	}
	for i := max(0, len(as)-2); i < len(as); i++ {
		a := as[i]
		if len(vs[i].tests) > 0 {
			return "", "", false // a test failed: the change may have broken it, wherever it is
		}
		mod := ""
		for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
			if mm := failedModuleRe.FindStringSubmatch(strings.TrimSpace(l)); mm != nil {
				mod = strings.ToLower(firstNonEmpty(mm[1:]...))
			}
		}
		base := mod[strings.LastIndexAny(mod, "/:")+1:]
		if mod == "" || strings.Contains(scope, base) || strings.Contains(mod, scope[strings.LastIndexByte(scope, '/')+1:]) {
			return "", "", false
		}
		if !said && (a.PreTree == "" || !f.isDir(snapshot.NewHash(a.PreTree), base)) {
			return "", "", false // a module of its own beside the one the prompt is about, or nothing to tell
		}
		if d := f.diffOf(a); d == nil || slices.ContainsFunc(d.Paths, func(p PathStat) bool {
			return slices.Contains(strings.Split(strings.ToLower(p.Path), "/"), base)
		}) {
			return "", "", false
		}
		failed = mod
	}
	return failed, scope, true
}

// moduleWordRe: a word of a prompt that may name a module of the repository (payments-core,
// services/billing).
var moduleWordRe = lazyre.New(`[A-Za-z][\w.]*(?:[-/][\w.]+)+`)

// promptModule is the first word of the prompt, with a hyphen or slash in it (a module, not a
// common word), that names a path of attempt a's tree: the module the task is about, when the
// prompt does not say "only".
func (f *facts) promptModule(a storeAttempt) string {
	if f.repo == nil || a.PreTree == "" {
		return ""
	}
	tree := snapshot.NewHash(a.PreTree)
	for _, w := range moduleWordRe.FindAllString(f.def.Prompt, -1) {
		if w = strings.Trim(w, "./"); f.isDir(tree, w) {
			return strings.ToLower(w)
		}
	}
	return ""
}

// isDir: tree holds a directory at path p.
func (f *facts) isDir(tree snapshot.Hash, p string) bool {
	ok, err := f.repo.IsDir(tree, p)
	return err == nil && ok
}

var outsideScopeRule = Rule{
	Name: "verify-fails-outside-scope", Category: WorkflowBug, Confidence: 0.74,
	Match: func(f *facts) bool { _, _, ok := f.outsideScope(); return ok },
	Why: func(f *facts) string {
		mod, scope, _ := f.outsideScope()
		keeps := "keeps the agent to"
		if !onlyScopeRe.MatchString(f.def.Prompt) {
			keeps = "is about"
		}
		return fmt.Sprintf("the prompt %s %s, and the verify fails in %s, which no attempt touched, in its build rather than a test: %s", keeps, scope, mod, f.last().Message)
	},
	Suggest: func(f *facts) Suggestion {
		mod, scope, _ := f.outsideScope()
		return Suggestion{Text: fmt.Sprintf("narrow `verify.command` of task %s to %s (mvn -pl %s -am verify, gradle :%s:check, pnpm --filter %s, cargo test -p %s), or fix %s first, in %s; then run the task again",
			f.task.ID, scope, scope, scope, scope, scope, mod, f.fileName()), Commands: []string{f.fixed()}}
	},
}

// The prompt forbids touching a place ("do not touch anything under db/") and the agent says the
// fix needs exactly that place: no attempt can do it as asked.

// forbidsRe: the place a prompt forbids changing.
var forbidsRe = lazyre.New("(?i)(?:do not|don't|never|must not|without)\\s+(?:(?:add(?:ing)?|creat(?:e|ing)|writ(?:e|ing)|touch(?:ing)?|edit(?:ing)?|chang(?:e|ing)|modif(?:y|ying)|updat(?:e|ing))\\b(?:\\s+(?:or|and)\\s+|,\\s*|\\s*/\\s*)?)+\\s*(?:anything\\s+(?:under|in)\\s+|(?:(?:any|the)\\s+)?(?:files?\\s+(?:under|in)\\s+)?)`?([\\w./-]*[\\w/])`?")

// toldNotRe: an agent saying the task told it not to.
var toldNotRe = lazyre.New(`(?i)(?:task|prompt|instructions?)\s+(?:says?|said|asks?|asked|tells?|told me)\s+(?:me\s+)?(?:not to|to not)|\byou (?:asked|told) me not to\b|(?:not allowed|forbidden|forbids|was told not)\s+to|\b(?:is|are) (?:frozen|off-limits|read-only)\b.{0,40}\b(?:won't|will not|didn't|did not|cannot|can't)\b|\b(?:as (?:instructed|asked|requested|you asked|told)|per (?:the|your) instructions),? I (?:did not|didn't|have not|haven't|won't|will not|left)\b`)

// phraseRe: the words that go on from the forbidden place's first word, up to the clause's end
// (" Core migrations" after "EF").
var phraseRe = lazyre.New(`^(?:[ \t]+[A-Za-z][\w-]*){1,3}\b`)

// forbiddenFix is the place the prompt forbids and the agent's sentence that the fix needs it.
func (f *facts) forbiddenFix() (string, string, bool) {
	a := f.last()
	if f.def == nil || a.Class != cQuality {
		return "", "", false
	}
	ag := f.agentOf(a)
	for _, m := range forbidsRe.FindAllStringSubmatchIndex(f.def.Prompt, -1) {
		place := strings.TrimSuffix(f.def.Prompt[m[2]:m[3]], ".")
		if len(place) < 2 {
			continue
		}
		// The thing forbidden may be a phrase rather than a path ("EF Core migrations"): its
		// last word names it.
		noun := strings.TrimSuffix(place, "/")
		if rest := phraseRe.FindString(f.def.Prompt[m[3]:]); rest != "" && !strings.ContainsAny(place, "/.") {
			if ws := strings.Fields(rest); len(ws[len(ws)-1]) >= 4 {
				place, noun = place+rest, ws[len(ws)-1]
			}
		}
		// A path is named by its last part too, as the agent may ("invoicing/migrations/":
		// "I did not create a migration file").
		nouns := []string{noun}
		if i := strings.LastIndex(noun, "/"); i >= 0 && len(noun)-i > 5 {
			last := noun[i+1:]
			nouns = append(nouns, last, strings.TrimSuffix(last, "s"))
		}
		for _, l := range evidence.Lines(strings.ReplaceAll(ag.LastMessage+"\n"+ag.Said, ". ", ".\n")) {
			if toldNotRe.MatchString(l) && slices.ContainsFunc(nouns, func(n string) bool { return strings.Contains(l, n) }) {
				return place, clip(strings.TrimSpace(l)), true
			}
		}
		if l, ok := f.verifyWantsChanged(place); ok {
			return place, l, true
		}
	}
	return "", "", false
}

// verifyWantsChanged is the line in which the verify, after regenerating files (`make manifests
// && git diff --exit-code`), finds them changed under place, in every rejected attempt (two at
// least) while no attempt touched place: the change the task asks for makes files the prompt
// forbids touching out of date.
func (f *facts) verifyWantsChanged(place string) (string, bool) {
	as, _ := f.qualityViews()
	if len(as) < 2 {
		return "", false
	}
	dir := strings.TrimSuffix(strings.TrimPrefix(place, "./"), "/") + "/"
	line := ""
	for _, a := range as {
		if d := f.diffOf(a); d == nil || slices.ContainsFunc(d.Paths, func(p PathStat) bool { return strings.HasPrefix(p.Path, dir) }) {
			return "", false
		}
		line = ""
		for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
			if strings.HasPrefix(l, "diff --git a/"+dir) {
				line = l
				break
			}
		}
		if line == "" {
			return "", false
		}
	}
	return line, true
}

var forbiddenFixRule = Rule{
	Name: "prompt-forbids-the-fix", Category: WorkflowBug, Confidence: 0.81,
	Match: func(f *facts) bool { _, _, ok := f.forbiddenFix(); return ok },
	Why: func(f *facts) string {
		p, l, _ := f.forbiddenFix()
		return fmt.Sprintf("the prompt forbids touching %s, and the fix needs it (the agent says so, or the verify finds it out of date): %s", p, l)
	},
	Suggest: func(f *facts) Suggestion {
		p, _, _ := f.forbiddenFix()
		return Suggestion{Text: fmt.Sprintf("allow the change in %s in the prompt of task %s (or make it first yourself), in %s; then run the task again", p, f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}}
	},
	Lines: func(f *facts) []string { _, l, _ := f.forbiddenFix(); return []string{l} },
}

// The prompt asks for a change the verify exists to refuse: a compatibility checker (buf
// breaking, an API report, a semver check) names, on every attempt, the very identifiers the
// prompt asks to rename or remove. The agent did the task; the task and its verify disagree.

// compatSaysRe: a compatibility checker's words for a change it refuses.
var compatSaysRe = lazyre.New(`(?i)\bchanged (?:name|type|option|label|cardinality|json_name)\b|\bbreaking change|\bincompatible (?:change|with the previous)|\bwas (?:removed|deleted|renamed)\b|\bremoved (?:field|method|function|type|enum|message|export|public)|API (?:report|signature)s? (?:changed|differs?|is out of date)|\bsemver[- ]?(?:major|violation)|\bdata member (?:insertion|deletion)|\btype size changed\b`)

// promptIdentRe: an identifier the prompt quotes ("`eta`", "'estimated_arrival'").
var promptIdentRe = lazyre.New("[`'\"]([A-Za-z_][\\w.]*)[`'\"]")

// askRefused is the line in which the verify refuses what the prompt asks, when every rejected
// attempt (two at least) ended on such a line naming an identifier the prompt quotes (two, when
// the only ones it names are shorter than four letters).
func (f *facts) askRefused() (string, bool) {
	as, _ := f.qualityViews()
	if f.def == nil || len(as) < 2 || f.last().Class != cQuality {
		return "", false
	}
	var idents []string
	for _, m := range promptIdentRe.FindAllStringSubmatch(f.def.Prompt, -1) {
		idents = append(idents, m[1])
	}
	line := ""
	for _, a := range as {
		line = ""
		ls := evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)])
		for i, l := range ls {
			if !compatSaysRe.MatchString(l) {
				continue
			}
			// (abidiff names the member on the line below: "1 data member insertion:",
			// "'unsigned int timeout_ms', at offset 96".)
			near := strings.Join(ls[i:min(len(ls), i+3)], " ")
			n := 0
			for _, id := range idents {
				if hasWord(near, id) {
					n++
					if len(id) >= 4 {
						n++
					}
				}
			}
			if n >= 2 {
				line = strings.Join(strings.Fields(near), " ")
				break
			}
		}
		if line == "" {
			return "", false
		}
	}
	return clip(line), true
}

var askRefusedRule = Rule{
	Name: "verify-refuses-the-ask", Category: WorkflowBug, Confidence: 0.8,
	Match: func(f *facts) bool { _, ok := f.askRefused(); return ok },
	Why: func(f *facts) string {
		l, _ := f.askRefused()
		return "the verify refuses the very change the prompt asks for, on every attempt: " + l
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("make the task and its verify agree in %s: ask for a compatible change (keep the old name, deprecate it) or let the verify accept this one (its exception or baseline); then run task %s again", f.fileName(), f.task.ID),
			Commands: []string{f.fixed()}}
	},
	Lines: func(f *facts) []string { l, _ := f.askRefused(); return []string{l} },
}

// The verify asks for a step of its own in so many words (changesets' "Run `changeset add` to
// resolve this error", Django's "Run 'manage.py makemigrations' to make new migrations", Rails'
// "To resolve this issue, run: bin/rails db:migrate") that the prompt never names: the untouched
// tree passes (nothing changed, nothing to record), and every attempt's change fails on that step
// alone, no test failing and the build whole. The agent did what it was asked; the prompt lacks
// the step.

// stepAskedRe: a tool naming the command that resolves its error.
var stepAskedRe = lazyre.New("(?i)\\b(?:please run|run|try running|you (?:must|need to|should) run)\\s+[`'\"]([^`'\"]{2,80})[`'\"]\\s+(?:to|and then|then)\\b|To resolve this issue, run:\\s+(\\S.{1,78})$")

// installStepRe: a step that installs the project's dependencies (what the machine lacks, not a
// step of the task's).
var installStepRe = lazyre.New(`^(?:npm|yarn|pnpm|pip3?|poetry|uv|bundle|composer|cargo|go|gem|dotnet|mix)\s+(?:install|ci|i|add|sync|restore|get|fetch|deps\.get|mod download)\b`)

// runnerWords do not tell one step from another ("npx changeset add": changeset does).
var runnerWords = []string{"npm", "npx", "yarn", "pnpm", "run", "exec", "bin/rails", "rails", "python", "python3", "manage.py", "./manage.py", "bundle", "cargo", "make", "go", "--"}

// askedStep is the command the verify asks for and its line: the same in every rejected attempt
// (two at least, the run stopping on one), no test failing or build broken in any, the base
// passing, and no word of the command in the prompt (told, the agent not doing it is its own
// mistake).
func (f *facts) askedStep() (cmd, line string, ok bool) {
	as, _ := f.qualityViews()
	if f.def == nil || len(as) < 2 || f.lastClass() != cQuality || f.base == nil || f.base.failed() {
		return "", "", false
	}
	for _, a := range as {
		t := f.testsOf(a)
		if len(t.Failed) > 0 || len(t.Suites) > 0 || len(t.Build) > 0 {
			return "", "", false
		}
		c, l := "", ""
		for _, x := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
			if m := stepAskedRe.FindStringSubmatch(x); m != nil {
				c, l = strings.TrimSpace(m[1]+m[2]), clip(strings.TrimSpace(x))
				break
			}
		}
		if c == "" || cmd != "" && c != cmd || installStepRe.MatchString(c) {
			return "", "", false
		}
		cmd, line = c, l
	}
	prompt := strings.ToLower(f.def.Prompt)
	for _, w := range strings.Fields(strings.ToLower(cmd)) {
		if len(w) >= 4 && !slices.Contains(runnerWords, w) && !strings.HasPrefix(w, "-") && hasWord(prompt, w) {
			return "", "", false
		}
	}
	return cmd, line, true
}

var askedStepRule = Rule{
	Name: "verify-asks-a-step", Category: WorkflowBug, Confidence: 0.78,
	Match: func(f *facts) bool { _, _, ok := f.askedStep(); return ok },
	Why: func(f *facts) string {
		c, l, _ := f.askedStep()
		return fmt.Sprintf("the untouched tree passes the verify, and every attempt's change fails it only on a step the verify asks for (`%s`) and the prompt never names: %s", c, l)
	},
	Suggest: func(f *facts) Suggestion {
		c, _, _ := f.askedStep()
		s := Suggestion{Text: fmt.Sprintf("add the step to the prompt of task %s in %s (\"then run `%s`\"), or run it yourself on the attempt's tree; then run the task again", f.task.ID, f.fileName(), c),
			Commands: []string{f.fixed()}, Change: fmt.Sprintf("task %s's prompt: add \"then run `%s`\"", f.task.ID, c)}
		if f.commands["prompt"] && f.task.State == "blocked" {
			s.Commands = append(s.Commands, fmt.Sprintf("mulligan prompt %s/%s %s", f.run.ID, f.task.ID, shellQuote("When the change is done, also run `"+c+"`: the verify asks for it.")))
		}
		return s
	},
	Lines: func(f *facts) []string { _, l, _ := f.askedStep(); return []string{l} },
}

// A runtime that runs the verify's code only with the permissions its command grants (Deno)
// names the flag it lacks, on the untouched tree as after the attempts: the command's, not the
// code's, and no attempt can change it.

// runtimeFlagRe: Deno's word for a permission its command did not grant; Django's for the
// settings module its command did not name.
var runtimeFlagRe = lazyre.New(`[Rr]equires \w+ access to .*?, run again with the (--allow-[\w-]+) flag|must either define the environment variable (DJANGO_SETTINGS_MODULE) or call settings\.configure`)

// verifyLacksFlag is the flag and the line, when the base and the last rejected attempt both
// name it.
func (f *facts) verifyLacksFlag() (string, string, bool) {
	if f.lastClass() != cQuality || !f.base.failed() {
		return "", "", false
	}
	find := func(text string) (string, string) {
		for _, l := range evidence.Lines(text) {
			if m := runtimeFlagRe.FindStringSubmatch(l); m != nil {
				if m[2] != "" {
					return "DJANGO_SETTINGS_MODULE=PROJECT.settings (or pytest's --ds)", clip(strings.TrimSpace(l))
				}
				return m[1], clip(strings.TrimSpace(l))
			}
		}
		return "", ""
	}
	flag, line := find(f.base.Output)
	a := f.last()
	if again, _ := find(f.verifyOutput[key(a.TaskID, a.N)]); flag == "" || again != flag {
		return "", "", false
	}
	return flag, line, true
}

var lacksFlagRule = Rule{
	Name: "verify-lacks-flag", Category: WorkflowBug, Confidence: 0.85,
	Match: func(f *facts) bool { _, _, ok := f.verifyLacksFlag(); return ok },
	Why: func(f *facts) string {
		flag, l, _ := f.verifyLacksFlag()
		return fmt.Sprintf("the verify's runtime refuses what its command does not grant (%s), on the untouched tree as after the attempts: %s", flag, l)
	},
	Suggest: func(f *facts) Suggestion {
		flag, _, _ := f.verifyLacksFlag()
		return Suggestion{Text: fmt.Sprintf("add %s to `verify.command` of task %s in %s, then run the task again", flag, f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: add " + flag}
	},
	Lines: func(f *facts) []string { _, l, _ := f.verifyLacksFlag(); return []string{l} },
}
