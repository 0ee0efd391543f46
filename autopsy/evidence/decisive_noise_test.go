package evidence

import "testing"

// The lines around a cause that are not it: advice and help addresses, a tool's footer, a build
// script's directives, a task runner's word that a command exited, a runner's tally, the wrapped
// half of a sentence; and the causes under a heading: an exception's message below its class, a
// resolver's proof, a box's summary. Each case is the verify output of an end-to-end run (named
// first) that recorded the wrong line, with the tool texts it was taken from.
func TestDecisiveLinePassesOverAdvice(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{
			// e18e/opencode-openssl-sys-pkg-config: openssl-sys's build script without pkg-config or
			// OpenSSL's headers (sfackler/rust-openssl's find_normal.rs texts): cargo's directives are
			// no cause, the script's stderr is, its wrapped sentence joined.
			"cargo, a build script's own words under its directives",
			"   Compiling libc v0.2.169\n" + "   Compiling pkg-config v0.3.31\n" + "   Compiling cc v1.2.10\n" +
				"   Compiling vcpkg v0.2.15\n" + "   Compiling once_cell v1.20.2\n" +
				"   Compiling openssl-sys v0.9.104\n" + "   Compiling tokio v1.43.0\n" +
				"   Compiling serde v1.0.217\n" +
				"error: failed to run custom build command for `openssl-sys v0.9.104`\n" + "\n" + "Caused by:\n" +
				"  process didn't exit successfully: `/srv/ci/hookrelay/target/debug/build/openssl-sys-6f2a0d8c1b9e4a7d/build-script-main` (exit status: 101)\n" +
				"  --- stdout\n" + "  cargo:rerun-if-env-changed=X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR\n" +
				"  X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR unset\n" +
				"  cargo:rerun-if-env-changed=OPENSSL_LIB_DIR\n" + "  OPENSSL_LIB_DIR unset\n" +
				"  cargo:rerun-if-env-changed=X86_64_UNKNOWN_LINUX_GNU_OPENSSL_INCLUDE_DIR\n" +
				"  X86_64_UNKNOWN_LINUX_GNU_OPENSSL_INCLUDE_DIR unset\n" +
				"  cargo:rerun-if-env-changed=OPENSSL_INCLUDE_DIR\n" + "  OPENSSL_INCLUDE_DIR unset\n" +
				"  X86_64_UNKNOWN_LINUX_GNU_OPENSSL_DIR unset\n" + "  OPENSSL_DIR unset\n" +
				"  cargo:rerun-if-env-changed=PKG_CONFIG_SYSROOT_DIR_x86_64-unknown-linux-gnu\n" +
				"  cargo:rerun-if-env-changed=PKG_CONFIG_SYSROOT_DIR_x86_64_unknown_linux_gnu\n" +
				"  cargo:rerun-if-env-changed=HOST_PKG_CONFIG_SYSROOT_DIR\n" +
				"  cargo:rerun-if-env-changed=PKG_CONFIG_SYSROOT_DIR\n" + "\n" + "\n" +
				"  Could not find openssl via pkg-config:\n" +
				"  Could not run `PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 pkg-config --libs --cflags openssl`\n" +
				"  The pkg-config command could not be found.\n" + "\n" +
				"  Most likely, you need to install a pkg-config package for your OS.\n" +
				"  Try `apt install pkg-config`, or `yum install pkg-config`,\n" +
				"  or `pkg install pkg-config`, or `apk add pkgconfig` depending on your distribution.\n" + "\n" +
				"  If you've already installed it, ensure the pkg-config command is one of the\n" +
				"  directories in the PATH environment variable.\n" + "\n" +
				"  If you did not expect this build to link to a pre-installed system library,\n" +
				"  then check documentation of the openssl-sys crate for an option to\n" +
				"  build the library from source, or disable features or dependencies\n" +
				"  that require pkg-config.\n" + "\n" +
				"  cargo:warning=Could not find directory of OpenSSL installation, and this `-sys` crate cannot proceed without this knowledge. If OpenSSL is installed and this crate had trouble finding it,  you can set the `OPENSSL_DIR` environment variable for the compilation process. See stderr section below for further information.\n" +
				"\n" + "  --- stderr\n" + "\n" + "\n" +
				"  Could not find directory of OpenSSL installation, and this `-sys` crate cannot\n" +
				"  proceed without this knowledge. If OpenSSL is installed and this crate had\n" +
				"  trouble finding it,  you can set the `OPENSSL_DIR` environment variable for the\n" +
				"  compilation process.\n" + "\n" +
				"  Make sure you also have the development packages of openssl installed.\n" +
				"  For example, `libssl-dev` on Ubuntu or `openssl-devel` on Fedora.\n" + "\n" +
				"  If you're in a situation where you think the directory *should* be found\n" +
				"  automatically, please open a bug at https://github.com/sfackler/rust-openssl\n" +
				"  and include information about your system as well as this message.\n" + "\n" +
				"  $HOST = x86_64-unknown-linux-gnu\n" + "  $TARGET = x86_64-unknown-linux-gnu\n" +
				"  openssl-sys = 0.9.104\n" + "\n" + "\n" +
				"warning: build failed, waiting for other jobs to finish...\n",
			"error: failed to run custom build command for `openssl-sys v0.9.104`: Could not find directory of OpenSSL installation, and this `-sys` crate cannot proceed without this knowledge.",
		},
		{
			// e18e/codex-terraform-state-lock: terraform apply while another run holds the DynamoDB
			// lock (hashicorp/terraform's backend/remote-state/s3 texts): the box's summary, not the
			// detail under it.
			"terraform, the summary of its diagnostic box",
			"Success! The configuration is valid.\n" + "\n" +
				"Acquiring state lock. This may take a few moments...\n" + "╷\n" +
				"│ Error: Error acquiring the state lock\n" + "│ \n" +
				"│ Error message: ConditionalCheckFailedException: The conditional request\n" + "│ failed\n" +
				"│ Lock Info:\n" + "│   ID:        b7d2e1a4-93c0-6f15-2a8e-5c4f0d9b7e31\n" +
				"│   Path:      acme-tfstate-prod/staging/platform.tfstate\n" +
				"│   Operation: OperationTypeApply\n" + "│   Who:       dmitri@ci-runner-07\n" +
				"│   Version:   1.9.8\n" + "│   Created:   2026-12-04 23:41:17.302948113 +0000 UTC\n" +
				"│   Info:      \n" + "│ \n" + "│ \n" +
				"│ Terraform acquires a state lock to protect the state from being written\n" +
				"│ by multiple users at the same time. Please resolve the issue above and try\n" +
				"│ again. For most commands, you can disable locking with the \"-lock=false\"\n" +
				"│ flag, but this is not recommended.\n" + "╵\n",
			"Error: Error acquiring the state lock",
		},
		{
			// e18b/gemini-nextjs-node-version-nvmrc: next build on an older Node under pnpm --filter
			// (vercel/next.js's version check): a requirement the machine does not meet, above pnpm's
			// wrapper code.
			"next.js, the version it requires",
			"\n" + "> web@0.3.0 build /home/dev/plans-site/apps/web\n" + "> next build\n" + "\n" +
				"You are using Node.js 18.17.1. For Next.js, Node.js version \"^18.18.0 || ^19.8.0 || >= 20.0.0\" is required.\n" +
				"/home/dev/plans-site/apps/web:\n" +
				" ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  web@0.3.0 build: `next build`\n" + "Exit status 1\n",
			"You are using Node.js 18.17.1. For Next.js, Node.js version \"^18.18.0 || ^19.8.0 || >= 20.0.0\" is required.",
		},
		{
			// e18b/gemini-turbo-test-silent-failure: turbo 2 with outputLogs none: its lines that a
			// command exited are no cause; the task it names is what a person quotes.
			"turbo, the failed task over its exit lines",
			"turbo 2.3.3\n" + "\n" +
				"• Packages in scope: @acme/api, @acme/config, @acme/ui, @acme/utils, web\n" +
				"• Running test in 5 packages\n" + "• Remote caching disabled\n" +
				"@acme/ui:test: ERROR: command finished with error: command (/srv/acme/packages/ui) /usr/local/bin/pnpm run test exited (1)\n" +
				"@acme/ui#test: command (/srv/acme/packages/ui) /usr/local/bin/pnpm run test exited (1)\n" + "\n" +
				" Tasks:    3 successful, 4 total\n" + "Cached:    2 cached, 4 total\n" + "  Time:    7.418s \n" +
				"Failed:    @acme/ui#test\n" + "\n" + " ERROR  run failed: command  exited (1)\n",
			"Failed: @acme/ui#test",
		},
		{
			// e18c/aider-uv-unsatisfiable-pins: uv lock --locked on pins no version satisfies
			// (astral-sh/uv's resolver report): the tree's head and its proof, the proof's wrapped
			// lines joined.
			"uv, the resolver's proof",
			"Using CPython 3.11.10 interpreter at: /usr/bin/python3.11\n" +
				"  × No solution found when resolving dependencies:\n" +
				"  ╰─▶ Because pandas==2.2.2 depends on numpy>=1.26.0 and your project\n" +
				"      depends on numpy>=1.23,<1.25, we can conclude that your project and\n" +
				"      pandas==2.2.2 are incompatible.\n" +
				"      And because your project depends on pandas==2.2.2, we can conclude\n" +
				"      that your project's requirements are unsatisfiable.\n",
			"No solution found when resolving dependencies: Because pandas==2.2.2 depends on numpy>=1.26.0 and your project depends on numpy>=1.23,<1.25, we can conclude that your project and pandas==2.2.2 are inc…",
		},
		{
			// e19b/claude-rspec-pending-migration-bash-denied: rspec-rails with a pending migration
			// (rails' ActiveRecord::PendingMigrationError; the second of its two files): the
			// exception and its message below it, not RSpec's tally.
			"rspec, an exception outside of examples",
			"\n" + "An error occurred while loading ./spec/models/order_spec.rb.\n" +
				"Failure/Error: ActiveRecord::Migration.maintain_test_schema!\n" + "\n" +
				"ActiveRecord::PendingMigrationError:\n" + "\n" +
				"  Migrations are pending. To resolve this issue, run:\n" + "\n" +
				"          bin/rails db:migrate RAILS_ENV=test\n" + "\n" + "  You have 1 pending migration:\n" +
				"\n" + "  20250114091530_add_discount_cents_to_line_items.rb\n" +
				"# /home/dev/.gem/ruby/3.3.0/gems/activerecord-7.1.3/lib/active_record/migration.rb:732:in `check_pending_migrations'\n" +
				"# ./spec/rails_helper.rb:28:in `<top (required)>'\n" +
				"# ./spec/models/order_spec.rb:1:in `require'\n" +
				"# ./spec/models/order_spec.rb:1:in `<top (required)>'\n" + "Run options: exclude {:slow=>true}\n" +
				"\n" + "Finished in 0.00004 seconds (files took 1.83 seconds to load)\n" +
				"0 examples, 0 failures, 2 errors occurred outside of examples\n" + "\n",
			"ActiveRecord::PendingMigrationError: Migrations are pending. To resolve this issue, run: bin/rails db:migrate RAILS_ENV=test",
		},
		{
			// e19b/aider-pest-composer-ext-intl-missing: composer install without ext-intl (composer's
			// SolverProblemsException texts): the first problem, not the advice after the list.
			"composer, its first problem",
			"Installing dependencies from lock file (including require-dev)\n" +
				"Verifying lock file contents can be installed on current platform.\n" +
				"Your lock file does not contain a compatible set of packages. Please run composer update.\n" + "\n" +
				"  Problem 1\n" +
				"    - Root composer.json requires PHP extension ext-intl * but it is missing from your system. Install or enable PHP's intl extension.\n" +
				"  Problem 2\n" +
				"    - brick/money is locked to version 0.10.0 and an update of this package was not requested.\n" +
				"    - brick/money 0.10.0 requires ext-intl * -> it is missing from your system. Install or enable PHP's intl extension.\n" +
				"\n" + "To enable extensions, verify that they are enabled in your .ini files:\n" +
				"    - /etc/php/8.3/cli/php.ini\n" + "    - /etc/php/8.3/cli/conf.d/10-mysqlnd.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/10-opcache.ini\n" + "    - /etc/php/8.3/cli/conf.d/10-pdo.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/15-xml.ini\n" + "    - /etc/php/8.3/cli/conf.d/20-calendar.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/20-ctype.ini\n" + "    - /etc/php/8.3/cli/conf.d/20-curl.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/20-dom.ini\n" + "    - /etc/php/8.3/cli/conf.d/20-fileinfo.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/20-mbstring.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/20-pdo_sqlite.ini\n" +
				"    - /etc/php/8.3/cli/conf.d/20-tokenizer.ini\n" + "    - /etc/php/8.3/cli/conf.d/20-zip.ini\n" +
				"You can also run `php --ini` in a terminal to see which files are used by PHP in CLI mode.\n" +
				"Alternatively, you can run Composer with `--ignore-platform-req=ext-intl` to temporarily ignore these missing extensions.\n",
			"Root composer.json requires PHP extension ext-intl * but it is missing from your system. Install or enable PHP's intl extension.",
		},
		{
			// e19b/codex-credo-new-issue-every-attempt: mix credo --strict (rrrene/credo's output):
			// the issue and its place, not the footer that is the same on every run.
			"credo, the issue over its footer",
			"  Code Readability                                                                                                          \n" +
				"┃ \n" + "┃ [R] ↗ Modules should have a @moduledoc tag.\n" +
				"┃       lib/hooky/backoff.ex:1:11 #(Hooky.Backoff)\n" + "\n" +
				"Please report incorrect results: https://github.com/rrrene/credo/issues\n" + "\n" +
				"Analysis took 0.3 seconds (0.03s to load, 0.3s running 60 checks on 38 files)\n" +
				"187 mods/funs, found 1 code readability issue.\n" + "\n" +
				"Showing priority issues: ↑ ↗ →  (use `mix credo explain` to explain issues, `mix credo --help` for options).\n",
			"lib/hooky/backoff.ex:1:11: Modules should have a @moduledoc tag.",
		},
		{
			// e19d/opencode-eslint9-first-task-fails-fix-skipped: eslint 9 with only an .eslintrc
			// (eslint's config-file-missing message): the error, not where to chat.
			"eslint 9, the missing flat config",
			"\n" + "Oops! Something went wrong! :(\n" + "\n" + "ESLint: 9.0.0\n" + "\n" +
				"ESLint couldn't find an eslint.config.(js|mjs|cjs) file.\n" + "\n" +
				"From ESLint v9.0.0, the default configuration file is now eslint.config.js.\n" +
				"If you are using a .eslintrc.* file, please follow the migration guide\n" +
				"to update your configuration file to the new format:\n" + "\n" +
				"https://eslint.org/docs/latest/use/configure/migration-guide\n" + "\n" +
				"If you still have problems after following the migration guide, please stop by\n" +
				"https://eslint.org/chat/help to chat with the team.\n" + "\n",
			"ESLint couldn't find an eslint.config.(js|mjs|cjs) file.",
		},
		{
			// e19a/claude-overloaded-then-gosumdb-private: go mod tidy on a private module without
			// GOPRIVATE (golang/go#35421): the checksum database's 404, not the server's words quoted
			// under it; the chain clipped by its middle.
			"go, the sum database's status over its response",
			"go: downloading git.internal.paylane.io/platform/authz v1.8.3\n" +
				"go: git.internal.paylane.io/platform/authz@v1.8.3: verifying go.mod: git.internal.paylane.io/platform/authz@v1.8.3/go.mod: reading https://sum.golang.org/lookup/git.internal.paylane.io/platform/authz@v1.8.3: 404 Not Found\n" +
				"\tserver response:\n" +
				"\tnot found: git.internal.paylane.io/platform/authz@v1.8.3: unrecognized import path \"git.internal.paylane.io/platform/authz\": https fetch: Get \"https://git.internal.paylane.io/platform/authz?go-get=1\": dial tcp: lookup git.internal.paylane.io on 8.8.8.8:53: no such host\n",
			"go: git.internal.paylane.io/platform/authz@v1.8.3: …: reading https://sum.golang.org/lookup/git.internal.paylane.io/platform/authz@v1.8.3: 404 Not Found",
		},
		{
			// e19a/codex-golangci-lint-timeout-flag: golangci-lint past its --timeout
			// (golangci/golangci-lint-action#308): logfmt records at level error, the last one
			// says why, its message without the record's keys.
			"golangci-lint, the last error record",
			"level=error msg=\"Running error: context loading failed: failed to load packages: timed out to load packages: context deadline exceeded\"\n" +
				"level=error msg=\"Timeout exceeded: try increasing it by passing --timeout option\"\n",
			"Timeout exceeded: try increasing it by passing --timeout option",
		},
		{
			// prost-build's build script without protoc (its error as tokio-rs/prost#1004
			// quotes it): the stderr says why, the directives above it do not.
			"cargo, a build script's stderr",
			"error: failed to run custom build command for `api v0.1.0 (/app/api)`\n\nCaused by:\n" +
				"  process didn't exit successfully: `/app/target/debug/build/api-1f0e0d9c8b7a6e5d/build-script-build` (exit status: 1)\n" +
				"  --- stdout\n  cargo:rerun-if-changed=proto/api.proto\n  cargo:rerun-if-changed=proto\n\n  --- stderr\n" +
				"  Error: Custom { kind: NotFound, error: \"Could not find `protoc`. If `protoc` is installed, try setting the `PROTOC` environment variable to the path of the `protoc` binary.\" }\n",
			"error: failed to run custom build command for `api v0.1.0 (/app/api)`: Error: Custom { kind: NotFound, error: \"Could not find `protoc`. If `protoc` is installed, try setting the `PROTOC` environment variable to the path of the `pro…",
		},
		// What stays as it was.
		{
			"logfmt, a warning is no error",
			"level=warning msg=\"[runner] The linter 'golint' is deprecated (since v1.41.0) due to: The repository of the linter has been archived by the owner.\"\n" +
				"level=error msg=\"Running error: can't run linter goanalysis_metalinter: buildir: failed to load package\"\n" +
				"level=warning msg=\"[runner] Can't run linter unused: buildir: failed to load package\"\n",
			"Running error: can't run linter goanalysis_metalinter: buildir: failed to load package",
		},
		{
			"advice alone is no cause",
			"Most likely, you need to install a pkg-config package for your OS.\nTry `apt install pkg-config`, or `yum install pkg-config`.\nSee https://docs.rs/pkg-config for more.\n",
			"",
		},
		{
			"a requirement does not outrank a named error",
			"This project requires Node.js 20 or later.\nError: Cannot find module 'vite'\nRequire stack:\n- /app/build.js\n",
			"Error: Cannot find module 'vite'",
		},
		{
			"an exception's class with nothing below it",
			"Loading fixtures\nActiveRecord::NoDatabaseError:\n",
			"ActiveRecord::NoDatabaseError:",
		},
		{
			// A short line ends where its writer ended it: the next is no continuation.
			"a short line is not wrapped",
			"error: linking with `cc` failed\nnote: collect2: ld returned 1 exit status\nbuild failed\n",
			"error: linking with `cc` failed",
		},
		{
			"terraform, a warning box is no error",
			"╷\n│ Warning: Argument is deprecated\n│ \n│ Use the aws_s3_bucket_lifecycle_configuration resource instead.\n╵\n" +
				"npm error Missing script: \"plan\"\n",
			"npm error Missing script: \"plan\"",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DecisiveLine(c.out); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
