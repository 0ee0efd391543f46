package evidence

import "testing"

// A tool's own summary or trailer says only that something failed; the decisive line is the
// cause above it. The outputs are the tools' own texts: BuildKit's plain progress around npm's
// ERESOLVE report (docker/buildx#2648, DomiStyle/docker-tor-browser#50, JohnCoene/npm#4),
// Docker Hub's pull limit as BuildKit wraps it (radius-project/radius#8021), tox 4's summary
// (tox-dev/tox#3649).
func TestDecisiveLinePassesOverSummaries(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"buildkit, npm ci", `#7 [3/5] COPY package.json package-lock.json ./
#7 DONE 0.0s

#8 [4/5] RUN npm ci
#8 0.512 npm ERR! code ERESOLVE
#8 0.515 npm ERR! ERESOLVE unable to resolve dependency tree
#8 0.515 npm ERR! 
#8 0.515 npm ERR! While resolving: app@1.0.0
#8 0.515 npm ERR! Found: esbuild@0.8.57
#8 0.515 npm ERR! node_modules/esbuild
#8 0.515 npm ERR!   dev esbuild@"^0.8.46" from the root project
#8 0.515 npm ERR! 
#8 0.515 npm ERR! Could not resolve dependency:
#8 0.515 npm ERR! peer esbuild@"^0.19.4" from esbuild-sass-plugin@2.16.1
#8 0.516 npm ERR! 
#8 0.516 npm ERR! Fix the upstream dependency conflict, or retry
#8 0.516 npm ERR! this command with --force or --legacy-peer-deps
#8 0.516 npm ERR! to accept an incorrect (and potentially broken) dependency resolution.
#8 0.516 npm ERR! 
#8 0.517 npm ERR! A complete log of this run can be found in:
#8 0.517 npm ERR!     /root/.npm/_logs/2026-12-04T10_00_00_000Z-debug-0.log
#8 ERROR: process "/bin/sh -c npm ci" did not complete successfully: exit code: 1
------
 > [4/5] RUN npm ci:
0.516 npm ERR! to accept an incorrect (and potentially broken) dependency resolution.
0.516 npm ERR! 
0.517 npm ERR! A complete log of this run can be found in:
0.517 npm ERR!     /root/.npm/_logs/2026-12-04T10_00_00_000Z-debug-0.log
------
Dockerfile:5
--------------------
   3 |     WORKDIR /app
   4 |     COPY package.json package-lock.json ./
   5 | >>> RUN npm ci
   6 |     COPY . .
--------------------
ERROR: failed to solve: process "/bin/sh -c npm ci" did not complete successfully: exit code: 1
`, "npm ERR! ERESOLVE unable to resolve dependency tree"},
		{"buildkit, docker hub pull limit", `#2 [internal] load metadata for docker.io/library/golang:1.22-alpine
#2 ERROR: failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/library/golang/manifests/sha256:f56a8a4a1aea41bc4694728b69c219af1523aea15690cbbed82dc9bac81e6603: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit
------
 > [internal] load metadata for docker.io/library/golang:1.22-alpine:
------
ERROR: failed to solve: golang:1.22-alpine: failed to resolve source metadata for docker.io/library/golang:1.22-alpine: failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/library/golang/manifests/sha256:f56a8a4a1aea41bc4694728b69c219af1523aea15690cbbed82dc9bac81e6603: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit
`, "ERROR: failed to solve: …: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit"},
		{"tox, no interpreter", `py39: skipped because could not find python interpreter with spec(s): py39
  py39: SKIP (0.00 seconds)
  evaluation failed :( (0.24 seconds)
`, "py39: skipped because could not find python interpreter with spec(s): py39"},
		{"tox, a command that failed", `py311: install_deps> python -I -m pip install -r requirements.txt
py311: commands[0]> python -m mylib.check
Traceback (most recent call last):
  File "/repo/mylib/check.py", line 3, in <module>
    import yaml
ModuleNotFoundError: No module named 'yaml'
py311: exit 1 (0.05 seconds) /repo> python -m mylib.check pid=4242
  py311: FAIL code 1 (2.35 seconds)
  evaluation failed :( (2.49 seconds)
`, "ModuleNotFoundError: No module named 'yaml'"},
		{"a long assertion keeps its start", "E       AssertionError: assert {'id': 7, 'name': 'widget', 'tags': ['a', 'b', 'c'], 'price': 12.5, 'stock': {'eu': 3, 'us': 9}, 'meta': {'created': '2026-12-01', 'owner': 'ops'}} == {'id': 7, 'name': 'widget', 'tags': ['a', 'b']}\n",
			"E       AssertionError: assert {'id': 7, 'name': 'widget', 'tags': ['a', 'b', 'c'], 'price': 12.5, 'stock': {'eu': 3, 'us': 9}, 'meta': {'created': '2026-12-01', 'owner': 'ops'}} == {'id': 7, 'name': …"},
	} {
		if got := DecisiveLine(c.out); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
