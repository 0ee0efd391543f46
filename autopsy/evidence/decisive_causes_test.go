package evidence

import (
	"strings"
	"testing"
)

// Where a tool puts its cause on a line of its own shape (each case names where its text was
// taken from; paths and names shortened). attempt's verify messages read the same texts.
func TestDecisiveLineReadsToolsCauses(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{
			// CMake's compiler check (Modules/CMakeDetermineCompiler.cmake's text): the message
			// spans lines and blank lines; the compiler's name is between them.
			"cmake, the compiler not in the PATH",
			"-- The C compiler identification is unknown\nCMake Error at CMakeLists.txt:14 (project):\n  The CMAKE_C_COMPILER:\n\n    arm-none-eabi-gcc\n\n" +
				"  is not a full path and was not found in the PATH.\n\n  Tell CMake where to find the compiler by setting either the environment\n  variable \"CC\" or the CMake cache entry CMAKE_C_COMPILER to the full path to\n\n\n-- Configuring incomplete, errors occurred!\n",
			"CMake Error at CMakeLists.txt:14: The CMAKE_C_COMPILER: arm-none-eabi-gcc is not a full path and was not found in the PATH.",
		},
		{
			// west runs CMake; Zephyr's FindZephyr-sdk.cmake finds no SDK. west's own last word
			// says only that cmake exited.
			"west, cmake's find_package under it",
			"-- ZEPHYR_TOOLCHAIN_VARIANT not set, trying to locate Zephyr SDK\nCMake Error at /home/ci/zephyrproject/zephyr/cmake/modules/FindZephyr-sdk.cmake:161 (find_package):\n" +
				"  Could not find a package configuration file provided by \"Zephyr-sdk\"\n  (requested version 0.16) with any of the following names:\n\n    Zephyr-sdkConfig.cmake\n\n" +
				"-- Configuring incomplete, errors occurred!\nFATAL ERROR: command exited with status 1: /usr/bin/cmake -B/home/ci/beacon/build -GNinja -S/home/ci/beacon\n",
			`CMake Error at FindZephyr-sdk.cmake:161: Could not find a package configuration file provided by "Zephyr-sdk" (requested version 0.16) with any of the following names:`,
		},
		{
			// A cargo test runner (probe-rs run) says why it failed; cargo's trailer below it is
			// its own chain, not the runner's cause.
			"cargo, a custom runner's error above cargo's chain",
			"     Running tests/i2c_hil.rs (target/thumbv7em-none-eabihf/debug/deps/i2c_hil-6f1b)\nError: No connected probes were found.\nerror: test failed, to rerun pass `--test i2c_hil`\n\n" +
				"Caused by:\n  process didn't exit successfully: `probe-rs run --chip nRF52840_xxAA target/debug/deps/i2c_hil-6f1b` (exit status: 1)\n",
			"Error: No connected probes were found.",
		},
		{
			// vstest (dotnet test) when its test host dies: the reason is on the line that says
			// the run was aborted, not on its totals below.
			"dotnet test, the test host crashed",
			"Starting test execution, please wait...\nA total of 1 test files matched the specified pattern.\nThe active test run was aborted. Reason: Test host process crashed\n" +
				"Results File: /src/tests/Api.Tests/TestResults/_ci_2026-12-05_04_12_33.trx\n\nTest Run Aborted.\nTotal tests: Unknown\n     Passed: 11\n Total time: 6.2817 Seconds\n",
			"The active test run was aborted. Reason: Test host process crashed",
		},
		{
			// pip building a meson-python package (mesonbuild/meson#12594): pip's trailer says
			// only that the metadata step failed; meson's error inside its output is why, the
			// compilers it tried below it are its detail.
			"pip, meson's error inside the subprocess's output",
			"  error: subprocess-exited-with-error\n  \n  × Preparing editable metadata (pyproject.toml) did not run successfully.\n  │ exit code: 1\n  ╰─> [21 lines of output]\n" +
				"      Build type: native build\n      \n      ../../meson.build:1:0: ERROR: Unknown compiler(s): [['cc'], ['gcc'], ['clang']]\n      The following exception(s) were encountered:\n" +
				"      Running `cc --version` gave \"[Errno 2] No such file or directory: 'cc'\"\n      Running `gcc --version` gave \"[Errno 2] No such file or directory: 'gcc'\"\n      \n" +
				"      A full log can be found at /src/build/cp312/meson-logs/meson-log.txt\n      [end of output]\n  \n  note: This error originates from a subprocess, and is likely not a problem with pip.\n" +
				"error: metadata-generation-failed\n\n× Encountered error while generating package metadata.\n╰─> See above for output.\n\nnote: This is an issue with the package mentioned above, not pip.\nhint: See above for details.\n",
			"../../meson.build:1:0: ERROR: Unknown compiler(s): [['cc'], ['gcc'], ['clang']]",
		},
		{
			// elm (its Http error report): the sentence announces the error, the error is below.
			"elm, the error below the sentence that announces it",
			"-- PROBLEM LOADING PACKAGE LIST ------------------------------------------------\n\nI need the list of published packages to verify your dependencies, so I tried to\nfetch:\n\n    https://package.elm-lang.org/all-packages\n\n" +
				"But my HTTP library is giving me the following error message:\n\n    ConnectionFailure Network.Socket.getAddrInfo (called with preferred socket type/protocol: AddrInfo {addrFlags = [AI_ADDRCONFIG]}, host name: Just \"package.elm-lang.org\", service name: Just \"443\"): does not exist (Name or service not known)\n\n" +
				"Are you somewhere with a slow internet connection? Or no internet?\n",
			"But my HTTP library is giving me the following error message: ConnectionFailure Network.Socket.getAddrInfo (called with preferred socket type/protocol: AddrInfo {addrFlags = [AI_ADDRCONFIG]}, host nam…",
		},
		{
			// Chromium without a display (Playwright's Electron): its last line says only that
			// it exits.
			"chromium, no display",
			"[4817:1204/031522.118466:ERROR:ozone_platform_x11.cc(240)] Missing X server or $DISPLAY\n[4817:1204/031522.118512:ERROR:env.cc(255)] The platform failed to initialize.  Exiting.\n",
			"[4817:1204/031522.118466:ERROR:ozone_platform_x11.cc(240)] Missing X server or $DISPLAY",
		},
		{
			// goreleaser: its error is a field of its last log line; the link below it is advice.
			"goreleaser, the link below the error",
			"  • docker images\n    • building docker image                          image=ghcr.io/sandbar/tarpit:0.4.3-amd64\n" +
				"  ⨯ release failed after 24s                 error=docker build failed: exit status 1: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n learn more at https://goreleaser.com/errors/docker-build\n",
			"⨯ release failed after 24s                 error=docker build failed: exit status 1: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
		},
		{
			// A test binary killed by a signal: the signal is the cause.
			"cargo, a signal in the chain",
			"error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully: `/src/target/debug/deps/ring-4f1b` (signal: 11, SIGSEGV: invalid memory reference)\n",
			"process didn't exit successfully: `/src/target/debug/deps/ring-4f1b` (signal: 11, SIGSEGV: invalid memory reference)",
		},
		{
			// miri under cargo: rustc's "aborting due to" and cargo's chain are trailers.
			"miri, undefined behaviour above the trailers",
			"test ring::tests::peek_wraps_around ... \nerror: Undefined Behavior: out-of-bounds pointer use: alloc1873 has size 8\n  --> src/ring.rs:41:18\n   |\n" +
				"note: some details are omitted, run with `MIRIFLAGS=-Zmiri-backtrace=full` for a verbose backtrace\n\nerror: aborting due to 1 previous error\n\nerror: test failed, to rerun pass `--lib`\n\n" +
				"Caused by:\n  process didn't exit successfully: `cargo-miri runner target/miri/debug/deps/ringlog-8c1f` (exit status: 1)\n",
			"error: Undefined Behavior: out-of-bounds pointer use: alloc1873 has size 8",
		},
		{
			// jacoco:check bound to verify in a reactor: the goal says to see the log; the rule
			// it printed above says which bundle and by how much.
			"maven, jacoco's rule above its goal",
			"[INFO] --- jacoco:0.8.11:check (check) @ legacy-ledger ---\n[INFO] Analyzed bundle 'legacy-ledger' with 112 classes\n" +
				"[WARNING] Rule violated for bundle legacy-ledger: lines covered ratio is 0.61, but expected minimum is 0.80\n[INFO] BUILD FAILURE\n" +
				"[ERROR] Failed to execute goal org.jacoco:jacoco-maven-plugin:0.8.11:check (check) on project legacy-ledger: Coverage checks have not been met. See log for details. -> [Help 1]\n",
			"Rule violated for bundle legacy-ledger: lines covered ratio is 0.61, but expected minimum is 0.80",
		},
		{
			// maven-enforcer-plugin: its message is on the line below the rule's name.
			"maven, the enforcer's rule message",
			"[WARNING] Rule 0: org.apache.maven.enforcer.rules.version.RequireJavaVersion failed with message:\n" +
				"[WARNING] Detected JDK version 17.0.9 (JAVA_HOME=/usr/lib/jvm/java-17) is not in the allowed range [21,).\n[INFO] BUILD FAILURE\n" +
				"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-enforcer-plugin:3.4.1:enforce (enforce-java) on project api: Some Enforcer rules have failed. Look above for specific messages explaining why the rule failed. -> [Help 1]\n",
			"Detected JDK version 17.0.9 (JAVA_HOME=/usr/lib/jvm/java-17) is not in the allowed range [21,).",
		},
		{
			// npm 10's audit report (GHSA-952p-6rrq-rcjv): the tally and the first advisory, not
			// its advice to choose another dependency.
			"npm audit, the tally and the advisory",
			"# npm audit report\n\nmicromatch  <4.0.8\nSeverity: moderate\nRegular Expression Denial of Service (ReDoS) in micromatch - https://github.com/advisories/GHSA-952p-6rrq-rcjv\nNo fix available\nnode_modules/micromatch\n" +
				"  @jest/core  *\n  Depends on vulnerable versions of micromatch\n  node_modules/@jest/core\n\n4 moderate severity vulnerabilities\n\nSome issues need review, and may require choosing\na different dependency.\n",
			"4 moderate severity vulnerabilities: micromatch  <4.0.8; Severity: moderate; Regular Expression Denial of Service (ReDoS) in micromatch; No fix available",
		},
		{
			// MSBuild names the project it could not find on the line below its error.
			"msbuild, the switch below MSB1009",
			"MSBUILD : error MSB1009: Project file does not exist.\nSwitch: tests/Billing.Tests/Billing.Tests.csproj\n",
			"MSBUILD : error MSB1009: Project file does not exist. Switch: tests/Billing.Tests/Billing.Tests.csproj",
		},
		{
			// Quarto prints its ERROR: mark alone, the cause on the next line.
			"quarto, the cause below a bare ERROR:",
			"  title: Q3 Regional Sales\nERROR: \nNo TeX installation was detected.\nPlease run 'quarto install tinytex' to install TinyTex.\n",
			"ERROR: No TeX installation was detected.",
		},
		{
			// git without git-lfs, before its suggestion of a similar command.
			"git, a command it does not have",
			"+ git lfs pull\ngit: 'lfs' is not a git command. See 'git --help'.\n\nThe most similar command is\n\tlog\n",
			"git: 'lfs' is not a git command. See 'git --help'.",
		},
		{
			// papermill's IPython traceback: the header names the exception, the last line says it.
			"papermill, the exception IPython's header names",
			"---------------------------------------------------------------------------\nArrowInvalid                              Traceback (most recent call last)\nCell In[2], line 3\n" +
				"----> 3 df = pd.read_parquet('data/sales.parquet')\n\nArrowInvalid: Could not open Parquet input source '<Buffer>': Parquet magic bytes not found in footer.\n",
			"ArrowInvalid: Could not open Parquet input source '<Buffer>': Parquet magic bytes not found in footer.",
		},
		{
			// jest under yarn v1 with a path pattern that matches nothing; yarn's trailer is not it.
			"jest, no tests found",
			"$ jest --ci --testPathPattern src/cart\nNo tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0\nPattern: src/cart - 0 matches\n" +
				"error Command failed with exit code 1.\ninfo Visit https://yarnpkg.com/en/docs/cli/run for documentation about this command.\n",
			"No tests found, exiting with code 1",
		},
		{
			// tox 4 with an interpreter it cannot find: its per-environment lines say only FAIL.
			"tox, the environment it could not create",
			"py38: skipped because could not find python interpreter with spec(s): py38\npy38: FAIL ✖ in 0.02 seconds\npy39: OK ✔ in 3.42 seconds\n  py38: FAIL code 1 (0.02 seconds)\n  py39: OK (3.42 seconds)\n  evaluation failed :( (3.49 seconds)\n",
			"py38: skipped because could not find python interpreter with spec(s): py38",
		},
		{
			// npm 10's missing script (npm/cli lib/commands/run-script.js), each line under
			// npm's mark.
			"npm, a mark alone is no error",
			"> shop@1.0.0 verify\n> npm run lint:ci\n\nnpm error Missing script: \"lint:ci\"\nnpm error\nnpm error To see a list of scripts, run:\nnpm error   npm run\n" +
				"npm error A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T08_00_00_000Z-debug-0.log\n",
			`npm error Missing script: "lint:ci"`,
		},
		{
			// pnpm's engine check, as pnpm/pnpm#7349 quotes it.
			"pnpm, its code line and the versions",
			"Scope: all 8 workspace projects\nLockfile is up to date, resolution step is skipped\n" +
				" ERR_PNPM_UNSUPPORTED_ENGINE  Unsupported environment (bad pnpm and/or Node.js version)\n\n" +
				"Your Node version is incompatible with \"/app\".\n\nExpected version: >=20.9.0\nGot: v18.19.1\n\n" +
				"This is happening because the package's manifest has an engines.node field specified.\nTo fix this issue, install the required Node version.\n",
			"ERR_PNPM_UNSUPPORTED_ENGINE Unsupported environment (bad pnpm and/or Node.js version): Node expected >=20.9.0, got v18.19.1",
		},
		{
			// pnpm's word that a script failed is no cause: the script's output above says it.
			"pnpm, a script that failed",
			"> app@1.0.0 test /app\n> node check.js\n\nError: config.yaml: no key 'port'\n" +
				" ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  app@1.0.0 test: `node check.js`\nExit status 1\n",
			"Error: config.yaml: no key 'port'",
		},
		{
			// NuGet's restore from a feed that wants credentials, as dotnet/apisof.net#142
			// quotes it.
			"nuget, the coded error and its reason",
			"  Determining projects to restore...\n" +
				"/usr/share/dotnet/sdk/8.0.100/NuGet.targets(156,5): error NU1301: Unable to load the service index for source https://pkgs.dev.azure.com/org/_packaging/feed/nuget/v3/index.json. [/src/App/App.csproj]\n" +
				"/usr/share/dotnet/sdk/8.0.100/NuGet.targets(156,5): error NU1301:   Response status code does not indicate success: 401 (Unauthorized). [/src/App/App.csproj]\n" +
				"  Failed to restore /src/App/App.csproj (in 1.2 sec).\n",
			"error NU1301: Unable to load the service index for source https://pkgs.dev.azure.com/org/_packaging/feed/nuget/v3/index.json. Response status code does not indicate success: 401 (Unauthorized).",
		},
		{
			// Django's test runner meeting a test database left behind, without --noinput
			// (django/db/backends/base/creation.py's question; input() at the end of stdin).
			"django, the question the EOFError met",
			"Creating test database for alias 'default'...\nGot an error creating the test database: database \"test_x\" already exists\n\n" +
				"Type 'yes' if you would like to try deleting the test database 'test_x', or 'no' to cancel: Traceback (most recent call last):\n" +
				"  File \"/app/manage.py\", line 22, in <module>\n    main()\n" +
				"  File \"/usr/lib/python3.12/site-packages/django/db/backends/base/creation.py\", line 213, in _create_test_db\n    confirm = input(\n              ^^^^^^\n" +
				"EOFError: EOF when reading a line\n",
			`Got an error creating the test database: database "test_x" already exists; Type 'yes' if you would like to try deleting the test database 'test_x', or 'no' to cancel: EOFError: EOF when reading a line`,
		},
		{
			// uv behind a TLS-intercepting proxy: the tree as astral-sh/uv#17355 quotes it,
			// after uv's spinner.
			"uv, the tree's head, its last cause and the flag",
			"⠇ Resolving dependencies...                   × Failed to download `requests==2.32.3`\n" +
				"  ├─▶ Failed to fetch: `https://files.pythonhosted.org/packages/requests-2.32.3-py3-none-any.whl`\n" +
				"  ├─▶ Request failed after 3 retries\n  ├─▶ error sending request for url (https://files.pythonhosted.org/packages/requests-2.32.3-py3-none-any.whl)\n" +
				"  ├─▶ client error (Connect)\n  ╰─▶ invalid peer certificate: UnknownIssuer\n" +
				"  help: Consider enabling use of system TLS certificates with the `--native-tls` command-line flag\n",
			"Failed to download `requests==2.32.3`: invalid peer certificate: UnknownIssuer (help: Consider enabling use of system TLS certificates with the `--native-tls` command-line flag)",
		},
		{
			// cargo test's chain, as Conflux-Chain/conflux-rust#1940 quotes it.
			"cargo, the signal under Caused by",
			"running 12 tests\ntest sync::tests::ok ... ok\nerror: test failed, to rerun pass '-p cfxcore --lib'\n\nCaused by:\n" +
				"  process didn't exit successfully: `/Users/u/conflux-rust/target/release/deps/cfxcore-68c52898dee7f7d9` (signal: 11, SIGSEGV: invalid memory reference)\n",
			// Over 200 bytes: the head and its cause are each clipped on their own.
			"error: test failed, to rerun pass '-p cfxcore --lib': process didn't exit successfully: `/Users/u/conflux-rust/target/release/deps/cfxcore-68c52898dee7f7d9` (signal: 11, SIGSEGV: invalid memory reference)",
		},
		{
			// uv's chain with --native-tls (astral-sh/uv#17355): each cause on its own line.
			"uv, the innermost cause of its chain",
			"error: Request failed after 3 retries\n  Caused by: Failed to fetch: `https://pypi.org/simple/pycowsay/`\n" +
				"  Caused by: error sending request for url (https://pypi.org/simple/pycowsay/)\n  Caused by: client error (Connect)\n" +
				"  Caused by: invalid peer certificate: UnknownIssuer\n",
			"error: Request failed after 3 retries: invalid peer certificate: UnknownIssuer",
		},
		{
			// pip behind a TLS-intercepting proxy: the retries as pypa/pip#8200 quotes them, the
			// end as certifi/python-certifi#213 does.
			"pip, the TLS failure it retried on",
			"Collecting requests\n" +
				"  WARNING: Retrying (Retry(total=1, connect=None, read=None, redirect=None, status=None)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1076)'))': /simple/requests/\n" +
				"  WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1076)'))': /simple/requests/\n" +
				"ERROR: Could not find a version that satisfies the requirement requests (from versions: none)\nERROR: No matching distribution found for requests\n",
			"ERROR: No matching distribution found for requests (last retry: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1076))",
		},
		{
			"pip, a refused connection",
			"WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f1c2a3b4c50>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/flask/\n" +
				"ERROR: No matching distribution found for flask\n",
			"ERROR: No matching distribution found for flask (last retry: Failed to establish a new connection: [Errno 111] Connection refused)",
		},
		{
			"pip, a retry it got past",
			"WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): Read timed out. (read timeout=15)\")': /simple/flask/\n" +
				"Collecting flask\nSuccessfully installed flask-3.0.0\n" + strings.Repeat("building wheel\n", 15) +
				"Error: config.yaml: no key 'port'\n",
			"Error: config.yaml: no key 'port'",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DecisiveLine(c.out); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
