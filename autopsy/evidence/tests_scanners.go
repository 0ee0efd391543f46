package evidence

import (
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Security scanners' findings are checks: the code builds and its tests may pass, but the scan
// does not accept it. Each finding is told by its rule and its place, so two attempts' findings
// compare, and a finding in a file no attempt touched (a test fixture's fake key) shows.

// gitleaks's report: a finding is a block of "Key: value" lines (Finding, Secret, RuleID, File,
// Line, …), the blocks separated by a blank line.
var (
	gitleaksRuleRe = lazyre.New(`^RuleID:\s+(\S+)$`)
	gitleaksFileRe = lazyre.New(`^File:\s+(\S+)$`)
	gitleaksLineRe = lazyre.New(`^Line:\s+(\d+)$`)
)

// semgrep's text report: the file on a line of its own, indented, then each finding's rule id
// after its severity arrows ("❯❱", "❯❯❱").
var (
	semgrepRuleRe = lazyre.New(`^\s*❯*❱\s+([\w.-]+)$`)
	semgrepFileRe = lazyre.New(`^ {4}(\S+\.\w+)$`)
)

// parseScanners adds gitleaks's and semgrep's findings to the checks: "tests/fixtures/x.ini:2:
// aws-access-token (gitleaks)".
func parseScanners(lines []string, r *Tests) {
	rule, file, line := "", "", ""
	flush := func() {
		if rule != "" && file != "" && len(r.Checks) < 20 {
			r.Checks = append(r.Checks, clip(strings.TrimSuffix(file+":"+line, ":")+": "+rule+" (gitleaks)"))
		}
		rule, file, line = "", "", ""
	}
	semFile := ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			flush()
		case gitleaksRuleRe.MatchString(t):
			rule = gitleaksRuleRe.FindStringSubmatch(t)[1]
		case gitleaksFileRe.MatchString(t):
			file = gitleaksFileRe.FindStringSubmatch(t)[1]
		case gitleaksLineRe.MatchString(t):
			line = gitleaksLineRe.FindStringSubmatch(t)[1]
		case semgrepFileRe.MatchString(l):
			semFile = semgrepFileRe.FindStringSubmatch(l)[1]
		case semgrepRuleRe.MatchString(l) && semFile != "" && len(r.Checks) < 20:
			r.Checks = append(r.Checks, clip(fmt.Sprintf("%s: %s (semgrep)", semFile, semgrepRuleRe.FindStringSubmatch(l)[1])))
		}
	}
	flush()
}
