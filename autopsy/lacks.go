package autopsy

import (
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// lackRes: what the machine lacks, in the words of the tools that say so, each with the command
// that adds it (the table machineLacks reads; depRes and the rest in machine.go).

type lackRe struct {
	re   *lazyre.Regexp
	what func(m []string) string
	fix  func(m []string) string
}

var lackRes = []lackRe{
	// phoenixframework/phoenix#3320: the database server has no such role.
	{lazyre.New(`FATAL:? 28000 .*role "([\w.-]+)" does not exist|FATAL:\s+role "([\w.-]+)" does not exist`),
		func(m []string) string {
			return "a PostgreSQL role " + firstNonEmpty(m[1:]...) + " on this machine's server"
		},
		func(m []string) string { return "sudo -u postgres createuser --superuser " + firstNonEmpty(m[1:]...) }},
	{lazyre.New(`NOAUTH Authentication required|WRONGPASS invalid username-password pair`),
		func(m []string) string { return "the password of this machine's Redis (it requires one)" },
		func(m []string) string {
			return "export REDIS_URL=redis://:PASSWORD@localhost:6379  # the requirepass of the Redis the tests use"
		}},
	{lazyre.New(`could not find driver \(Connection: (\w+)|PDOException::\("could not find driver"\)|PDOException: could not find driver`),
		func(m []string) string { return "PHP's PDO driver for " + cond(m[1] != "", m[1], "the database") },
		func(m []string) string {
			pkg := map[string]string{"sqlite": "php-sqlite3", "mysql": "php-mysql", "mariadb": "php-mysql", "pgsql": "php-pgsql", "sqlsrv": "php-sybase"}[m[1]]
			return "sudo apt-get install -y " + cond(pkg != "", pkg, "php-sqlite3 php-mysql php-pgsql")
		}},
	// ImageMagick's policy.xml (Debian and Ubuntu forbid the PDF and PS coders): the system's
	// setting, not the code's.
	{lazyre.New("not allowed by the security policy `(\\w+)'"),
		func(m []string) string {
			return "ImageMagick's permission for the " + m[1] + " coder (its policy.xml forbids it)"
		},
		func(m []string) string {
			return `sudo sed -i 's/rights="none" pattern="` + m[1] + `"/rights="read|write" pattern="` + m[1] + `"/' /etc/ImageMagick-*/policy.xml`
		}},
	// stack: the resolver's GHC is not installed (stack installs it when asked).
	{lazyre.New(`No compiler found, expected (?:minor version match|exact version) with ghc-([\d.]+)`),
		func(m []string) string { return "GHC " + m[1] + ", the compiler the project's stack resolver names" },
		func(m []string) string { return "stack setup" }},
	// opam without a switch: no OCaml compiler nor libraries for the project.
	{lazyre.New(`\[ERROR\] No switch is currently set|No switch .* is currently set`),
		func(m []string) string { return "an opam switch (an OCaml compiler with the project's libraries)" },
		func(m []string) string { return "opam switch create . --deps-only --with-test -y && eval $(opam env)" }},
	// jupyter_client: the notebook names a kernel no kernelspec provides (ipykernel not
	// installed in the environment the tests run in).
	{lazyre.New(`NoSuchKernel: No such kernel named ([\w.-]+)`),
		func(m []string) string { return "the Jupyter kernel " + m[1] + " (ipykernel)" },
		func(m []string) string {
			return "python3 -m pip install ipykernel && python3 -m ipykernel install --user --name " + m[1]
		}},
	// Hugo's standard edition cannot transpile SCSS (gohugoio/hugo's TOCSS error): the theme
	// needs the extended edition.
	{lazyre.New(`you need the extended version to build SCSS/SASS|this feature is not available in (?:your current|this) Hugo version`),
		func(m []string) string { return "Hugo's extended edition (the theme's SCSS needs it)" },
		func(m []string) string {
			return "CGO_ENABLED=1 go install -tags extended github.com/gohugoio/hugo@latest  # or hugo_extended from its releases"
		}},
	// sphinx.ext.graphviz (and plantuml, latex's) without the program it runs.
	{lazyre.New(`dot command '([\w./-]+)' cannot be run \(needed for graphviz output\)`),
		func(m []string) string { return "Graphviz (" + m[1] + "), which Sphinx's graphviz extension runs" },
		func(m []string) string { return "sudo apt-get install -y graphviz" }},
	// OWASP dependency-check: the NVD's API refuses (403) a client without an API key.
	{lazyre.New(`the NVD returned a 403 or 404 error|NVD Returned Status Code: 403`),
		func(m []string) string { return "an NVD API key for dependency-check (the NVD refuses it without one)" },
		func(m []string) string {
			return `dependency-check --nvdApiKey "$NVD_API_KEY"  # with the key requested at https://nvd.nist.gov/developers/request-an-api-key in NVD_API_KEY`
		}},
	// PHPUnit (and composer's platform check) without a PHP extension it requires.
	{lazyre.New(`but the "(\w+)" extension is not available|requires (?:the )?ext-(\w+) \*? ?-> it is missing from your system`),
		func(m []string) string { return "PHP's " + firstNonEmpty(m[1:]...) + " extension" },
		func(m []string) string { return "sudo apt-get install -y php-" + firstNonEmpty(m[1:]...) }},
	// mesonbuild/meson#12594: meson found none of the C compilers it tries.
	{lazyre.New(`ERROR: Unknown compiler\(s\): \[\['(\w+)'\]`),
		func(m []string) string { return "a C compiler (meson tried " + m[1] + ", gcc, clang)" },
		func(m []string) string { return "sudo apt-get install -y build-essential" }},
	// node-gyp, building a native module (electron-rebuild, npm install of one).
	{lazyre.New(`gyp ERR! .*Could not find any Python installation to use|gyp ERR! find Python Python is not set`),
		func(m []string) string { return "Python, which node-gyp needs to build native modules" },
		func(m []string) string { return "sudo apt-get install -y python3 build-essential" }},
	{lazyre.New("error: linker `([^`]+)` not found"),
		func(m []string) string { return "the C linker " + m[1] },
		func(m []string) string { return "sudo apt-get install -y build-essential" }},
	{lazyre.New("error: no such (?:sub)?command: `([\\w-]+)`"),
		func(m []string) string { return "the cargo subcommand " + m[1] },
		func(m []string) string { return "cargo install cargo-" + m[1] }},
	{lazyre.New(`git: 'lfs' is not a (?:git )?command|git-lfs: (?:command )?not found|This repository is configured for Git LFS but 'git-lfs' was not found`),
		func(m []string) string { return "Git LFS" },
		func(m []string) string { return "sudo apt-get install -y git-lfs" }},
	{lazyre.New(`JAVA_HOME is not set and no 'java' command could be found|JAVA_HOME is not set$|\[JAVA_GATEWAY_EXITED\]|Java gateway process exited before sending (?:the driver )?its port number|JAVA_HOME is set to an invalid directory|Unable to locate a Java Runtime`),
		func(m []string) string { return "a JDK (java on PATH, or JAVA_HOME)" },
		func(m []string) string { return "sudo apt-get install -y default-jdk" }},
	{lazyre.New(`Found no NVIDIA driver on your system|no CUDA GPUs are available|CUDA driver version is insufficient|Torch not compiled with CUDA enabled`),
		func(m []string) string { return "a GPU with its CUDA driver" },
		func(m []string) string { return "nvidia-smi" }},
	{lazyre.New(`requires cgo to work|-race requires cgo|cgo: C compiler "?(\w+)"? not found|exec: "(gcc|cc|clang)": executable file not found`),
		func(m []string) string { return "a C compiler for cgo (with CGO_ENABLED=1)" },
		func(m []string) string { return "sudo apt-get install -y build-essential" }},
	{lazyre.New(`(?i)Could not find directory of (OpenSSL) installation|Package '?(openssl|libssl)'?,? .*not found|fatal error: (openssl)/\w+\.h: No such file`),
		func(m []string) string { return "the OpenSSL development files" },
		func(m []string) string { return "sudo apt-get install -y libssl-dev pkg-config" }},
	{lazyre.New(`Package '?([\w.+-]+)'?,? (?:required by '[^']*', )?(?:was )?not found(?: in the pkg-config search path)?|No package '([\w.+-]+)' found|fatal error: ([\w./+-]+)\.h: No such file or directory|cannot find -l([\w+-]+)`),
		func(m []string) string { return "the development files of " + firstNonEmpty(m[1:]...) },
		func(m []string) string {
			return "sudo apt-get install -y pkg-config " + devPackage(firstNonEmpty(m[1:]...))
		}},
	// dotnet/sdk's resolver: global.json asks for an SDK this machine does not have.
	{lazyre.New(`Requested SDK version: (\d[\w.-]*)|A compatible (?:installed )?\.NET (?:Core )?SDK for global\.json version:? \[?(\d[\w.-]*)\]?`),
		func(m []string) string {
			return "the .NET SDK " + firstNonEmpty(m[1:]...) + " (global.json asks for it)"
		},
		func(m []string) string {
			return "curl -sSL https://dot.net/v1/dotnet-install.sh | bash -s -- --version " + firstNonEmpty(m[1:]...)
		}},
	// pg_dump refuses a server newer than itself.
	{lazyre.New(`server version: (\d+)[\d.]*.*; pg_dump version: (\d+)[\d.]*`),
		func(m []string) string {
			return "pg_dump " + m[1] + " (the server runs " + m[1] + ", this machine's pg_dump is " + m[2] + ")"
		},
		func(m []string) string { return "sudo apt-get install -y postgresql-client-" + m[1] }},
	{lazyre.New(`go(?:\.mod)? requires go >= ?([\d.]+) \(running go ([\d.]+)`),
		func(m []string) string { return "Go " + m[1] + " or later (this machine runs " + m[2] + ")" },
		func(m []string) string { return "go env -w GOTOOLCHAIN=go" + m[1] + "+auto" }},
	{lazyre.New(`The engine "node" is incompatible with this module\. Expected version "([^"]+)"\. Got "([^"]+)"|EBADENGINE.*node|Unsupported engine.*node|ERR_PNPM_UNSUPPORTED_ENGINE|Your Node version is incompatible with`),
		func(m []string) string { return "a newer Node.js" + orWord(strings.TrimSpace(" ("+m[1]+")"), "") },
		func(m []string) string { return "nvm install --lts" }},
	// Next.js and other tools checking the runtime themselves (vercel/next.js: "You are using
	// Node.js 18.17.1. For Next.js, Node.js version ">= 18.18.0" is required.").
	{lazyre.New(`You are using Node\.js v?([\d.]+)\. For [^,]+, Node\.js version "?([^"]+?)"? is required`),
		func(m []string) string { return "Node.js " + m[2] + " (this machine runs " + m[1] + ")" },
		func(m []string) string { return "nvm install " + highestMajor(m[2], "--lts") }},
	// Native modules built for another Node.js (nodejs/node-gyp): rebuilt, not rewritten.
	{lazyre.New(`was compiled against a different Node\.js version`),
		func(m []string) string { return "native modules built for this machine's Node.js" },
		func(m []string) string { return "npm rebuild" }},
	// numpy/numpy#26710, pandas-dev/pandas#55519, legend-exp/pygama#612: a compiled package and
	// the installed numpy disagree. The C header's size against the running numpy's says which side is older.
	{lazyre.New(`numpy\.dtype size changed, may indicate binary incompatibility\. Expected (\d+) from C header, got (\d+) from PyObject|A module that was compiled using NumPy 1\.x cannot be run in|_ARRAY_API not found|numpy\.core\.multiarray failed to import`),
		func(m []string) string {
			return "Python packages built for the numpy this environment has (a compiled package and numpy disagree)"
		},
		func(m []string) string {
			if m[1] != "" && atoi(m[1]) > atoi(m[2]) {
				return "python3 -m pip install --upgrade numpy"
			}
			return "python3 -m pip install 'numpy<2'"
		}},
	// rubygems: the Bundler version the Gemfile.lock was bundled with is not installed.
	{lazyre.New(`Could not find 'bundler' \(([\d.]+)\) required by your .*Gemfile\.lock|can't find gem bundler \(= ([\d.]+)\)`),
		func(m []string) string { return "Bundler " + firstNonEmpty(m[1:]...) + " (the Gemfile.lock's)" },
		func(m []string) string { return "gem install bundler:" + firstNonEmpty(m[1:]...) }},
	// The Android Gradle plugin checking the JDK that runs it.
	{lazyre.New(`requires Java (\d+) to run\. You are currently using Java (\d+)`),
		func(m []string) string { return "a JDK " + m[1] + " (this machine runs Java " + m[2] + ")" },
		func(m []string) string { return "sudo apt-get install -y openjdk-" + m[1] + "-jdk" }},
	// Bazel's remote cache or executor not answering (bazelbuild/bazel#27734, buildfarm#1790).
	{lazyre.New(`Failed to query remote execution capabilities: (?:UNAVAILABLE|DEADLINE_EXCEEDED)|Remote Cache: UNAVAILABLE|remote cache .*(?:UNAVAILABLE|connection refused)`),
		func(m []string) string {
			return "the Bazel remote cache or executor the build is set to use (it does not answer)"
		},
		func(m []string) string { return "grep -rn -e remote_cache -e remote_executor .bazelrc" }},
	// pytorch/vision#7389: a torchvision built for another torch.
	{lazyre.New(`operator torchvision::nms does not exist|torchvision is not compatible with torch|Detected that PyTorch and torchvision were compiled with different CUDA`),
		func(m []string) string { return "a torchvision built for the installed torch" },
		func(m []string) string { return "python3 -m pip install --upgrade torch torchvision" }},
	// cabal: the compiler cabal.project names is not installed (haskell/cabal's own words).
	{lazyre.New(`The program '(ghc-([\d.]+)|[\w.-]+)' is required but it could not be found`),
		func(m []string) string { return m[1] + " (the build asks for it by name)" },
		func(m []string) string {
			if m[2] != "" {
				return "ghcup install ghc " + m[2]
			}
			return installProgram(m[1])
		}},
	// cypress-io/cypress#8177: the npm package without the binary it downloads.
	{lazyre.New(`The cypress npm package is installed, but the Cypress binary is missing`),
		func(m []string) string { return "the Cypress binary (the npm package is there, its download is not)" },
		func(m []string) string { return "npx cypress install" }},
	// Electron, Chromium and GTK programs with no display to open (electron/electron#…).
	{lazyre.New(`Missing X server or \$DISPLAY|cannot open display|No available video device|Gtk-WARNING \*\*: .*cannot open display|no DISPLAY environment variable`),
		func(m []string) string { return "a display for the GUI tests (an X server or Xvfb)" },
		func(m []string) string { return "sudo apt-get install -y xvfb  # then run the verify under xvfb-run" }},
	// arduino-cli: the board's core not installed.
	{lazyre.New(`Platform '([\w-]+:[\w-]+)' not found: platform not installed`),
		func(m []string) string { return "the Arduino core " + m[1] },
		func(m []string) string { return "arduino-cli core update-index && arduino-cli core install " + m[1] }},
	// ESP-IDF's tools run outside the environment its export.sh sets up.
	{lazyre.New(`not spawned within an ESP-IDF shell environment|IDF_PATH environment variable is not set|idf\.py: command not found`),
		func(m []string) string { return "the ESP-IDF environment (export.sh sourced in the verify's shell)" },
		func(m []string) string {
			return ". $HOME/esp/esp-idf/export.sh  # ESP-IDF's environment, in the verify command"
		}},
	// mkdocs: a theme the config names that is not installed.
	{lazyre.New(`Unrecognised theme name: '([\w-]+)'`),
		func(m []string) string { return "the mkdocs theme " + m[1] },
		func(m []string) string { return "python3 -m pip install mkdocs-" + m[1] }},
	// cargo: a system library a -sys crate needs, found through pkg-config.
	{lazyre.New("The system library `([\\w.+-]+)` required by crate `([\\w-]+)` was not found"),
		func(m []string) string {
			return "the development files of " + m[1] + " (crate " + m[2] + " needs them)"
		},
		func(m []string) string {
			return "sudo apt-get install -y pkg-config lib" + strings.TrimPrefix(m[1], "lib") + "-dev"
		}},
	// govulncheck: a vulnerability in the standard library of the Go that ran it ("Fixed in:
	// net/http@go1.22.12"): a newer Go, not a change to the code.
	{lazyre.New(`Fixed in: [\w./-]+@go([\d.]+)`),
		func(m []string) string {
			return "Go " + m[1] + " or later (the standard library of this machine's Go has known vulnerabilities)"
		},
		func(m []string) string { return "go env -w GOTOOLCHAIN=go" + m[1] + "+auto" }},
	// git describe in a shallow clone (or one fetched without tags), as setuptools-scm and
	// version stamps run it (pypa/setuptools-scm#790).
	{lazyre.New(`fatal: No names found, cannot describe anything|setuptools-scm was unable to detect version|unable to detect version for`),
		func(m []string) string { return "the repository's tags (a shallow clone, or one fetched without them)" },
		func(m []string) string { return "git fetch --tags --unshallow" }},
	// Selenium without a driver for the browser (SeleniumHQ/selenium: "Unable to find
	// chromedriver", Selenium Manager's "Unable to obtain chromedriver").
	{lazyre.New(`Unable to (?:find|obtain|locate) (chromedriver|geckodriver|msedgedriver)`),
		func(m []string) string {
			return "the browser driver " + m[1] + " (Selenium cannot start a browser without it)"
		},
		func(m []string) string {
			if m[1] == "chromedriver" {
				return "npx @puppeteer/browsers install chromedriver@stable"
			}
			return installProgram(m[1])
		}},
	// R: a package the tests depend on is not installed (its system library missing, as a rule).
	{lazyre.New(`Dependency package\(s\) '([\w.]+)' not available|there is no package called ['‘]([\w.]+)['’]`),
		func(m []string) string { return "the R package " + firstNonEmpty(m[1:]...) },
		func(m []string) string {
			return "Rscript -e 'install.packages(\"" + firstNonEmpty(m[1:]...) + "\")'  # its system library first, e.g. libcurl4-openssl-dev for curl"
		}},
	// controller-runtime's envtest without its control-plane binaries (kubebuilder's assets).
	{lazyre.New(`fork/exec (\S*/(?:etcd|kube-apiserver)): no such file or directory`),
		func(m []string) string { return "envtest's control-plane binaries (" + m[1] + ")" },
		func(m []string) string {
			return "export KUBEBUILDER_ASSETS=$(go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use -p path)"
		}},
	// Elasticsearch past its flood-stage disk watermark: its indices turn read-only
	// (elastic/elasticsearch's cluster_block_exception).
	{lazyre.New(`flood[- ]stage (?:disk )?watermark|index read-only / allow delete|read-only-allow-delete block`),
		func(m []string) string {
			return "free disk for Elasticsearch (past its flood-stage watermark, its indices went read-only)"
		},
		func(m []string) string {
			return "df -h  # free disk where Elasticsearch keeps its data; then clear the read-only block"
		}},
	// Syntax every maintained Node.js parses (??=, ?., ??, ||=, &&=), refused: the node that ran
	// the tests is older than the code (a dependency's, as a rule) is written for.
	{lazyre.New(`SyntaxError: Unexpected token '(\?\?=|\?\?|\?\.|\|\|=|&&=)'`),
		func(m []string) string { return "a newer Node.js (this one does not parse `" + m[1] + "`)" },
		func(m []string) string { return "nvm install --lts" }},
	{lazyre.New(`requires a different Python: ([\d.]+) not in '([^']+)'|requires-python .*'([^']+)'`),
		func(m []string) string { return "a Python in " + firstNonEmpty(m[2], m[3]) },
		func(m []string) string { return "python3 --version" }},
	// zephyrproject-rtos/zephyr: FindZephyr-sdk.cmake finds no SDK (never installed, or
	// ZEPHYR_SDK_INSTALL_DIR unset).
	{lazyre.New(`(?i)Could not find a package configuration file provided by "Zephyr-sdk"|Could NOT find Zephyr-sdk|ZEPHYR_SDK_INSTALL_DIR .*(?:not|invalid)`),
		func(m []string) string {
			return "the Zephyr SDK (CMake could not find it; or ZEPHYR_SDK_INSTALL_DIR does not point at it)"
		},
		func(m []string) string { return "west sdk install" }},
	// ROS 2's packages (ament, rclcpp, the message packages) are found through the environment
	// its setup script sets: a shell that did not source it finds none (ros2/ros2#1140).
	{lazyre.New(`(?:Could NOT find|Could not find a package configuration file provided by) "?(ament_\w+|rclcpp|rclpy|rosidl_\w+|rcl\w*|\w+_msgs)"?`),
		func(m []string) string {
			return "the ROS 2 environment (" + m[1] + " is found once its setup.bash is sourced)"
		},
		func(m []string) string {
			return "source /opt/ros/$ROS_DISTRO/setup.bash  # (humble, jazzy…) in the verify's shell, before colcon"
		}},
	{lazyre.New(`Could NOT find ([\w.+-]+)|Could not find a package configuration file provided by "([\w.+-]+)"`),
		func(m []string) string {
			return "the development files of " + firstNonEmpty(m[1:]...) + " (CMake could not find it)"
		},
		func(m []string) string {
			return "sudo apt-get install -y " + cmakePackage(firstNonEmpty(m[1:]...))
		}},
	{lazyre.New(`Unable to load shared library '([\w.+-]+)'|(lib[\w+-]+)\.so[.\d]*: cannot open shared object file`),
		func(m []string) string { return "the shared library " + firstNonEmpty(m[1:]...) },
		func(m []string) string {
			return "sudo apt-get install -y " + strings.TrimSuffix(firstNonEmpty(m[1:]...), ".so")
		}},
	{lazyre.New(`(?i)you (?:must|need to) have ([A-Za-z][\w.+-]*)(?: or [\w.+-]+)? installed`),
		func(m []string) string { return m[1] + " (the tests need it installed)" },
		func(m []string) string { return installProgram(m[1]) }},
	{lazyre.New(`You have not agreed to the Xcode license|Agreeing to the Xcode/iOS license requires`),
		func(m []string) string { return "the Xcode licence accepted" },
		func(m []string) string { return "sudo xcodebuild -license accept" }},
	{lazyre.New(`sorry, too many clients already|SQLSTATE 53300|remaining connection slots are reserved`),
		func(m []string) string { return "free connections on the PostgreSQL server (it has too many clients)" },
		func(m []string) string { return "sudo systemctl restart postgresql" }},
	{lazyre.New(`vm\.max_map_count \[\d+\] is too low, increase to at least \[(\d+)\]`),
		func(m []string) string { return "a higher vm.max_map_count (Elasticsearch needs " + m[1] + ")" },
		func(m []string) string { return "sudo sysctl -w vm.max_map_count=" + m[1] }},
	{lazyre.New(`This version of ChromeDriver only supports Chrome version (\d+)`),
		func(m []string) string {
			return "a ChromeDriver that matches the installed Chrome (this one is for Chrome " + m[1] + ")"
		},
		func(m []string) string { return "npx @puppeteer/browsers install chromedriver@stable" }},
	{lazyre.New(`"([\w.+-]+)" not found in the path`),
		func(m []string) string { return m[1] + " (not on PATH)" },
		func(m []string) string { return installProgram(m[1]) }},
	{lazyre.New(`(?:setting|set) the ([A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|URL|URI|DSN|PASSWORD|PASS|HOST|CREDENTIALS|ACCOUNT|REGION|PROJECT|HOME)) environment variable|environment variable ([A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|URL|URI|DSN|PASSWORD|PASS|HOST|CREDENTIALS|ACCOUNT|REGION|PROJECT|HOME)) (?:is )?(?:not set|unset|missing|required|must be set)|\b([A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|URL|DSN|PASSWORD))\b (?:is not set|not set|must be set|is required|is missing|environment variable is (?:not set|missing|required))`),
		func(m []string) string {
			return "the environment variable " + firstNonEmpty(m[1:]...) + " (a secret or setting the tests read)"
		},
		func(m []string) string { return "export " + firstNonEmpty(m[1:]...) + "=..." }},
	{lazyre.New(`unrecognized arguments: .*--(cov|timeout|xdist|benchmark|asyncio|django|mock|randomly|rerun|html)\b|unrecognized arguments: -n\b`),
		func(m []string) string { return "the pytest plugin for " + orWord(m[1], "-n (pytest-xdist)") },
		func(m []string) string {
			p := map[string]string{"cov": "pytest-cov", "timeout": "pytest-timeout", "xdist": "pytest-xdist", "benchmark": "pytest-benchmark", "asyncio": "pytest-asyncio",
				"django": "pytest-django", "mock": "pytest-mock", "randomly": "pytest-randomly", "rerun": "pytest-rerunfailures", "html": "pytest-html"}[m[1]]
			return "python3 -m pip install " + orWord(p, "pytest-xdist")
		}},
	{lazyre.New(`version https://git-lfs\.github\.com/spec/v1|invalid load key, 'v'|is a Git LFS pointer|Parquet magic bytes not found in footer`),
		func(m []string) string { return "the Git LFS objects (the tree holds their pointer files)" },
		func(m []string) string { return "git lfs install && git lfs pull" }},
	{lazyre.New(`add_subdirectory given source\s+"?([^"\s]+)"?\s+which is not an|No url found for submodule path|fatal: not a git repository: .*/modules/`),
		func(m []string) string { return "the git submodules checked out" },
		func(m []string) string { return "git submodule update --init --recursive" }},
	{lazyre.New(`(?i)licences? have not been accepted|accept the SDK license agreements|You have not accepted the license agreements`),
		func(m []string) string { return "the Android SDK's licences accepted" },
		func(m []string) string { return "yes | sdkmanager --licenses" }},
	{lazyre.New(`xcrun: error: invalid active developer path|xcode-select: note: no developer tools were found|requires Xcode`),
		func(m []string) string { return "Apple's command line developer tools" },
		func(m []string) string { return "xcode-select --install" }},
	{lazyre.New(`(?i)Cannot find a Java installation on your machine matching this tasks requirements: \{languageVersion=(\d+)|No locally installed toolchains match`),
		func(m []string) string { return "a JDK " + orWord(m[1], "of the version the build's toolchain names") },
		func(m []string) string {
			if m[1] == "" {
				return "sudo apt-get install -y default-jdk"
			}
			return "sudo apt-get install -y openjdk-" + m[1] + "-jdk"
		}},
	{lazyre.New(`Unable to find libclang|couldn't find any valid shared libraries matching: \['libclang`),
		func(m []string) string { return "libclang (bindgen needs it)" },
		func(m []string) string { return "sudo apt-get install -y libclang-dev" }},
	{lazyre.New(`could not find python interpreter (?:with spec\(s\):|matching any of the specs) (?:py|python)?(\d)\.?(\d+)|InterpreterNotFound: python(\d)\.(\d+)`),
		func(m []string) string {
			return "a Python " + firstNonEmpty(m[1], m[3]) + "." + firstNonEmpty(m[2], m[4])
		},
		func(m []string) string {
			return "uv python install " + firstNonEmpty(m[1], m[3]) + "." + firstNonEmpty(m[2], m[4])
		}},
	{lazyre.New(`No interpreter found for Python ([^\s,]+)|Python downloads are set to 'never'`),
		func(m []string) string { return "a Python " + orWord(m[1], "the project requires") },
		func(m []string) string { return strings.TrimSpace("uv python install " + strings.Trim(m[1], "<>=~^")) }},
	{lazyre.New(`the Go language version \(go([\d.]+)\) used to build (\S+) is lower than the targeted Go version \(([\d.]+)\)`),
		func(m []string) string {
			return m[2] + " built with Go " + m[3] + " or later (it was built with go" + m[1] + ")"
		},
		func(m []string) string {
			if m[2] == "golangci-lint" {
				return "go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@latest"
			}
			return "command -v " + m[2]
		}},
	{lazyre.New(`(?i)\brequires (node(?:\.js)?|python|go|java|ruby|rustc|npm|pnpm|yarn|dotnet|php|cmake)\s*(?:version\s*)?(?:>=?|at least|\^|~)\s*v?([\d.]+)`),
		func(m []string) string { return m[1] + " " + m[2] + " or later" },
		func(m []string) string { return newerRuntime(strings.ToLower(m[1]), m[2]) }},
	{lazyre.New(`UnsupportedClassVersionError|Unsupported class file major version (\d+)|release version (\d+) not supported|invalid target release: (\d+)`),
		func(m []string) string { return "a newer JDK" },
		func(m []string) string { return "java -version" }},
	{lazyre.New(`Executable doesn't exist at \S*ms-playwright|npx playwright install`),
		func(m []string) string { return "Playwright's browsers" },
		func(m []string) string { return "npx playwright install" }},
	{lazyre.New(`(?i)System limit for number of file watchers reached|inotify watch limit reached|no space left on device.*inotify`),
		func(m []string) string {
			return "more inotify watches (the system's limit of file watchers is reached)"
		},
		func(m []string) string { return "sudo sysctl fs.inotify.max_user_watches=524288" }},
	// pre-commit-ci/issues#211: a dependency newer than the toolchain.
	{lazyre.New(`requires rustc ([\d.]+) or newer, while the currently active rustc version is ([\d.]+)`),
		func(m []string) string { return "Rust " + m[1] + " or later (this machine runs " + m[2] + ")" },
		func(m []string) string { return "rustup update stable" }},
	// pola-rs/polars#2922: a binary built for CPU features this machine lacks.
	{lazyre.New("Install the `?(polars-lts-cpu)`? package"),
		func(m []string) string { return "a CPU with the instructions polars is built for (or polars-lts-cpu)" },
		func(m []string) string { return "pip install polars-lts-cpu" }},
	{lazyre.New(`^(?:\S+: (?:line )?\d+: )?Illegal instruction(?: \(core dumped\))?$`),
		func(m []string) string {
			return "a CPU with the instructions a prebuilt binary needs (it died of SIGILL)"
		},
		func(m []string) string { return "grep -o -w -m1 -E 'avx2|avx512f|sse4_2' /proc/cpuinfo" }},
	// mickasmt/next-saas-stripe-starter#68: configuration the machine's environment lacks.
	{lazyre.New(`Environment variable not found: (\w+)|environment variable "?(\w+)"? (?:is )?not set|(\w+) environment variable is not set|ImproperlyConfigured: Set the (\w+) environment variable|(?i:missing (?:required )?(?:environment|env) variable):? "?([A-Z][A-Z0-9_]+)`),
		func(m []string) string { return "the environment variable " + firstNonEmpty(m[1:]...) },
		func(m []string) string { return "${EDITOR:-vi} .env  # set " + firstNonEmpty(m[1:]...) }},
	// Django and Rails create a test database: the database user may not.
	{lazyre.New(`permission denied to create database|must be owner of database|CREATE DATABASE permission denied`),
		func(m []string) string { return "a database user allowed to create the test database" },
		func(m []string) string { return "sudo -u postgres psql -c \"ALTER USER $USER CREATEDB\"" }},
	// jp-embedded/scxmlcc#61: a git submodule never initialised.
	{lazyre.New(`The source directory\s*(\S+)\s*does not contain a CMakeLists\.txt file|does not contain a CMakeLists\.txt file`),
		func(m []string) string { return "the repository's submodules, checked out" },
		func(m []string) string { return "git submodule update --init --recursive" }},
	// CounterpartyXCP/counterparty-core#1365: a locale the tests set that was never generated.
	// (bash's "warning: setlocale: LC_ALL: cannot change locale" is noise: it fails nothing.)
	{lazyre.New(`locale\.Error: unsupported locale setting`),
		func(m []string) string { return "the locale the tests set, generated" },
		func(m []string) string { return "sudo dpkg-reconfigure locales" }},
	// golang/go#29523: a Go build cache under a read-only home.
	{lazyre.New(`failed to initialize build cache at (\S+): .*read-only file system`),
		func(m []string) string {
			return "a writable Go build cache (" + strings.TrimSuffix(m[1], ":") + " is read-only)"
		},
		func(m []string) string { return "export GOCACHE=/tmp/go-build" }},
	// microsoft/playwright#28130: the browsers' system libraries.
	{lazyre.New(`Host system is missing dependencies to run browsers|error while loading shared libraries: (lib(?:nss3|atk|gbm|asound|xkbcommon|gtk)[\w.-]*)`),
		func(m []string) string { return "the system libraries Playwright's browsers need" },
		func(m []string) string { return "sudo npx playwright install-deps" }},
	{lazyre.New(`(?i)too many open files|\bEMFILE\b`),
		func(m []string) string { return "a higher limit of open files" },
		func(m []string) string { return "ulimit -n 65536" }},
	// pgvector/pgvector#67: an extension the server's packages do not include.
	{lazyre.New(`could not open extension control file "[^"]*?/(\d+)/extension/([\w-]+)\.control"|extension "([\w-]+)" is not available`),
		func(m []string) string {
			return "the PostgreSQL extension " + firstNonEmpty(m[2], m[3]) + " on this machine's server"
		},
		func(m []string) string {
			ext := firstNonEmpty(m[2], m[3])
			pkg := map[string]string{"vector": "pgvector", "postgis": "postgis-3", "timescaledb": "timescaledb", "pg_cron": "cron"}[ext]
			if pkg == "" {
				return "sudo apt-get install -y postgresql-contrib  # provides " + ext + ", if it is a contrib module"
			}
			return "sudo apt-get install -y postgresql-" + orWord(m[1], "16") + "-" + pkg
		}},
	// ycrypto/salty#30: a cross-compilation target rustup has not installed.
	{lazyre.New("the `([\\w.-]+)` target may not be installed"),
		func(m []string) string { return "the Rust target " + m[1] },
		func(m []string) string { return "rustup target add " + m[1] }},
	// Dart's pub: the project needs a newer SDK than the machine's ("The current Dart SDK
	// version is 3.3.4. Because app requires SDK version ^3.5.0, version solving failed.").
	{lazyre.New(`requires SDK version ([^\s,]+), version solving failed`),
		func(m []string) string { return "a Dart SDK " + m[1] + " (this machine's is older)" },
		func(m []string) string { return "flutter upgrade  # or a Dart SDK " + m[1] + " on PATH" }},
	// pymongo and the mongo shell: the user and password the tests connect with are refused.
	{lazyre.New(`'codeName': 'AuthenticationFailed'|"codeName":\s*"AuthenticationFailed"|MongoServerError: Authentication failed|OperationFailure: Authentication failed`),
		func(m []string) string {
			return "the MongoDB user and password the tests connect with (the server refuses them)"
		},
		func(m []string) string { return "${EDITOR:-vi} .env  # the MongoDB URL's user and password" }},
	// huggingface/transformers: the model is neither reachable nor in the local cache.
	{lazyre.New(`We couldn't connect to '(https?://[^']+)' to load this file(?:.*?it looks like (\S+) is not the path)?`),
		func(m []string) string {
			return "a connection to " + m[1] + " or the model in the local Hugging Face cache"
		},
		func(m []string) string {
			if m[2] != "" {
				return "huggingface-cli download " + m[2] + "  # where the network reaches it, into the HF_HOME the tests use"
			}
			return "curl -sSI " + m[1]
		}},
	// lovell/sharp: its prebuilt binary for this platform was not installed (optional deps).
	{lazyre.New(`Could not load the "sharp" module using the ([\w-]+) runtime`),
		func(m []string) string { return "sharp's prebuilt binary for " + m[1] },
		func(m []string) string { return "npm install --include=optional sharp" }},
	// karma-chrome-launcher: no Chrome to launch.
	{lazyre.New(`No binary for Chrome(?:Headless|Canary|ium)? browser on your platform`),
		func(m []string) string { return "a Chrome for Karma to launch (CHROME_BIN)" },
		func(m []string) string {
			return "sudo apt-get install -y chromium  # then export CHROME_BIN=/usr/bin/chromium"
		}},
	// R CMD check (and Rd2pdf) building the PDF manual with no TeX on the machine.
	{lazyre.New(`\bpdflatex is not available|pdflatex: (?:command )?not found`),
		func(m []string) string { return "a TeX distribution (pdflatex), for the PDF manual" },
		func(m []string) string {
			return "sudo apt-get install -y texlive-latex-base texlive-fonts-recommended  # or R CMD check --no-manual"
		}},
	// LaTeX without a package the document uses (a TeX Live collection not installed).
	{lazyre.New("! LaTeX Error: File `([\\w.-]+)\\.(?:sty|cls)' not found"),
		func(m []string) string { return "the LaTeX package " + m[1] },
		func(m []string) string {
			return "tlmgr install " + m[1] + "  # or your distribution's texlive package that has it"
		}},
	// Quarto rendering to PDF with no TeX.
	{lazyre.New(`No TeX installation was detected`),
		func(m []string) string { return "a TeX distribution for PDF output" },
		func(m []string) string { return "quarto install tinytex" }},
	// An out-of-tree kernel module built against headers this machine does not have.
	{lazyre.New(`/lib/modules/([\w.+-]+)/build: No such file or directory`),
		func(m []string) string { return "the kernel headers for " + m[1] },
		func(m []string) string { return "sudo apt-get install -y linux-headers-" + m[1] }},
	// mkdocs: a plugin mkdocs.yml names is not installed where the build runs.
	{lazyre.New(`Config value '?plugins'?: The "([\w.-]+)" plugin is not installed`),
		func(m []string) string { return "the mkdocs plugin " + m[1] },
		func(m []string) string { return "python3 -m pip install " + m[1] }},
	// Go's LoadLocation and Python's zoneinfo without the system's zone database.
	{lazyre.New(`unknown time zone [A-Z]\w+/\w+|ZoneInfoNotFoundError|No time zone found with key`),
		func(m []string) string { return "the time zone database (tzdata)" },
		func(m []string) string { return "sudo apt-get install -y tzdata" }},
	// aws-lambda-builders: no python on PATH satisfies the function's runtime.
	{lazyre.New(`Binary validation failed for python.*runtime: python(\d+\.\d+)`),
		func(m []string) string { return "Python " + m[1] + " on PATH (the function's runtime)" },
		func(m []string) string { return "sudo apt-get install -y python" + m[1] }},
	// Unity in batch mode on a machine whose editor licence is not activated.
	{lazyre.New(`No valid Unity Editor license found|Error: No ULF license found|License is not active \(com\.unity\.editor`),
		func(m []string) string { return "an activated Unity Editor licence" },
		func(m []string) string {
			return "Unity -batchmode -nographics -quit -serial SERIAL -username EMAIL -password PASSWORD  # activate this machine's licence (or -manualLicenseFile FILE.ulf)"
		}},
	// probe-rs/probe-rs: a hardware-in-the-loop test with no debug probe on the USB bus.
	{lazyre.New(`(?i)Error: No (?:connected )?probes (?:were )?found|no debug probe (?:was )?found|Error: Probe could not be opened`),
		func(m []string) string { return "a debug probe (probe-rs finds none attached)" },
		func(m []string) string { return "probe-rs list" }},
	// AGP's connected tests, adb, flutter: no device or emulator is up.
	{lazyre.New(`DeviceException: No (?:connected )?(?:devices|online devices)|error: no devices/emulators found|No supported devices connected|No devices (?:found|attached) (?:with|to run)`),
		func(m []string) string { return "a running Android emulator or a connected device (none is up)" },
		func(m []string) string { return `emulator -avd "$(emulator -list-avds | head -n 1)" -no-window &` }},
	{lazyre.New(`Could not find Chrome \(ver\.|npx puppeteer browsers install chrome`),
		func(m []string) string { return "Puppeteer's Chrome" },
		func(m []string) string { return "npx puppeteer browsers install chrome" }},
}

// devPackage is Debian's development package of a pkg-config module or library name.
func devPackage(name string) string {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "lib"), ".h")
	if p, ok := map[string]string{"curl": "libcurl4-openssl-dev", "ssl": "libssl-dev", "openssl": "libssl-dev", "crypto": "libssl-dev",
		"z": "zlib1g-dev", "zlib": "zlib1g-dev", "glib-2.0": "libglib2.0-dev", "gtk+-3.0": "libgtk-3-dev", "ffi": "libffi-dev",
		"xml-2.0": "libxml2-dev", "xml2": "libxml2-dev", "pq": "libpq-dev", "mysqlclient": "libmysqlclient-dev"}[name]; ok {
		return p
	}
	return "lib" + name + "-dev"
}

// portRes: a port the tests need is taken by another process.
var portRes = []lackRe{
	{lazyre.New(`(?i)(?:https?://)?(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d+) is already (?:used|in use)|Bind for [\d.:]*:(\d+) failed: port is already allocated|(?:listen|bind)[^\n]*:(\d+)[^\n]*address already in use|EADDRINUSE[^\n]*:(\d+)|port (\d+) is already in use`),
		func(m []string) string {
			return "a free port " + firstNonEmpty(m[1:]...) + " (another process holds it)"
		},
		func(m []string) string { return "ss -ltnp 'sport = :" + firstNonEmpty(m[1:]...) + "'" }},
}

// highestMajor is the highest major version a requirement names ("^18.18.0 || >= 20.0.0" → "20"),
// else def.
func highestMajor(req, def string) string {
	best := -1
	for _, m := range majorRe.FindAllStringSubmatch(req, -1) {
		best = max(best, atoi(m[1]))
	}
	if best < 0 {
		return def
	}
	return strconv.Itoa(best)
}

var majorRe = lazyre.New(`(?:^|[^\d.])(\d+)(?:\.\d+)*`)
