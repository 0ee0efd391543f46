package attempt

import (
	"strings"
	"testing"
)

// What a failed verify records, from the texts the tools print (each case names where its text
// was taken from; paths and names shortened).
func TestVerifySummaryQuotesTheCause(t *testing.T) {
	testSummaries(t, []summaryCase{
		{
			// pytest's setup errors: the sections as pandas-dev/pandas#24485 quotes them, psycopg2's
			// words from tk0miya/testing.postgresql#30, the count line as pytest ends a run whose
			// fixtures all raised ("3 errors", Aletheore/Aletheore#115).
			"pytest, every test errored at setup",
			"collected 3 items\n\ntests/test_db.py EEE                                                     [100%]\n\n" +
				"==================================== ERRORS ====================================\n" +
				"_________________________ ERROR at setup of test_insert _________________________\n\n" +
				"    @pytest.fixture\n    def db():\n>       conn = psycopg2.connect(\"dbname=test host=localhost\")\n" +
				"E       psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n" +
				"E       \tIs the server running on that host and accepting TCP/IP connections?\n\n" +
				"/usr/lib/python3/dist-packages/psycopg2/__init__.py:122: OperationalError\n" +
				"_________________________ ERROR at setup of test_select _________________________\n\n" +
				"E       psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n\n" +
				"/usr/lib/python3/dist-packages/psycopg2/__init__.py:122: OperationalError\n" +
				"_________________________ ERROR at setup of test_delete _________________________\n\n" +
				"E       psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n\n" +
				"/usr/lib/python3/dist-packages/psycopg2/__init__.py:122: OperationalError\n" +
				"=========================== short test summary info ============================\n" +
				"ERROR tests/test_db.py::test_insert - psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n" +
				"ERROR tests/test_db.py::test_select - psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n" +
				"ERROR tests/test_db.py::test_delete - psycopg2.OperationalError: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n" +
				"============================== 3 errors in 0.12s ===============================\n",
			`3 errors at setup: tests/test_db.py::test_insert, tests/test_db.py::test_select, tests/test_db.py::test_delete (/usr/lib/python3/dist-packages/psycopg2/__init__.py:122: psycopg2.OperationalError: connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused)`,
		},
		{
			"pytest, a failure and errors",
			"tests/test_api.py FEE                                                    [100%]\n\n" +
				"==================================== ERRORS ====================================\n" +
				"__________________________ ERROR at setup of test_get ___________________________\n" +
				"E       redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.\n\n" +
				"tests/conftest.py:14: ConnectionError\n" +
				"=================================== FAILURES ===================================\n" +
				"_________________________________ test_parse ___________________________________\n\n" +
				">       assert parse(\"a=1\") == {\"a\": 2}\nE       AssertionError: assert {'a': 1} == {'a': 2}\n\n" +
				"tests/test_api.py:7: AssertionError\n" +
				"=========================== short test summary info ============================\n" +
				"FAILED tests/test_api.py::test_parse - AssertionError: assert {'a': 1} == {'a': 2}\n" +
				"ERROR tests/test_api.py::test_get - redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.\n" +
				"========================= 1 failed, 1 error in 0.31s ===========================\n",
			"1 failed: tests/test_api.py::test_parse (tests/test_api.py:7: AssertionError: assert {'a': 1} == {'a': 2}); " +
				"1 error at setup: tests/test_api.py::test_get (tests/conftest.py:14: redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.)",
		},
		{
			// Maven's compiler plugin, as hmsonline/cassandra-rest#8 quotes it.
			"maven, the line under COMPILATION ERROR",
			"[INFO] Compiling 21 source files to /home/u/cassandra-rest/target/classes\n" +
				"[INFO] -------------------------------------------------------------\n[ERROR] COMPILATION ERROR : \n" +
				"[INFO] -------------------------------------------------------------\n" +
				"[ERROR] /home/u/cassandra-rest/src/main/java/com/hmsonline/virgil/cli/VirgilCommand.java:[50,18] error: incompatible types\n" +
				"[INFO] 1 error\n[INFO] -------------------------------------------------------------\n" +
				"[INFO] BUILD FAILURE\n[INFO] ------------------------------------------------------------------------\n" +
				"[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:2.3.2:compile (default-compile) on project hms-cassandra-rest: Compilation failure\n" +
				"[ERROR] -> [Help 1]\n",
			"does not build: [ERROR] /home/u/cassandra-rest/src/main/java/com/hmsonline/virgil/cli/VirgilCommand.java:[50,18] error: incompatible types",
		},
		{
			// cargo test's chain, as Conflux-Chain/conflux-rust#1940 quotes it.
			"cargo, the signal under Caused by",
			"running 12 tests\ntest sync::tests::ok ... ok\nerror: test failed, to rerun pass '-p cfxcore --lib'\n\nCaused by:\n" +
				"  process didn't exit successfully: `/Users/u/conflux-rust/target/release/deps/cfxcore-68c52898dee7f7d9` (signal: 11, SIGSEGV: invalid memory reference)\n",
			"error: test failed, to rerun pass '-p cfxcore --lib': process didn't exit successfully: `/Users/u/conflux-rust/target/release/deps/cfxcore-68c52898dee7f7d9` (signal: 11, SIGSEGV: invalid memory reference)",
		},
		{
			// node's heap exhaustion under jest (jestjs/jest#9980), ended by abort(), which bash
			// reports as "Aborted (core dumped)" (nodejs/help#2988).
			"jest, node's heap",
			" PASS  src/a.test.js\n\n<--- Last few GCs --->\n\n[10418:0x608a1e0]   232289 ms: Scavenge (reduce) 982.5 (998.4) -> 981.9 (999.4) MB, 19.0 / 0.0 ms  (average mu = 0.299, current mu = 0.342) allocation failure \n\n\n<--- JS stacktrace --->\n\n" +
				"FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory\n" +
				" 1: 0xa04200 node::Abort() [/opt/hostedtoolcache/node/14.15.4/x64/bin/node]\n" +
				" 2: 0x94e4e9 node::FatalError(char const*, char const*) [/opt/hostedtoolcache/node/14.15.4/x64/bin/node]\n" +
				"Aborted (core dumped)\n",
			"FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory",
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
		{
			// unittest's assertEqual on strings draws a diff under the exception (its layout as
			// zio/zio#4479 quotes it).
			"unittest, the exception above the diff",
			".F.\n======================================================================\nFAIL: test_greeting (test_greet.GreetTest.test_greeting)\n" +
				"----------------------------------------------------------------------\nTraceback (most recent call last):\n" +
				"  File \"/home/u/proj/test_greet.py\", line 8, in test_greeting\n    self.assertEqual(greet(\"bob\"), \"Hello, Bob!\")\n" +
				"AssertionError: 'Hello, bob!' != 'Hello, Bob!'\n- Hello, bob!\n?        ^\n+ Hello, Bob!\n?        ^\n\n\n" +
				"----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n",
			"1 failed: test_greeting (/home/u/proj/test_greet.py:8: AssertionError: 'Hello, bob!' != 'Hello, Bob!')",
		},
		{
			"unittest, a diff that adds",
			"F\n======================================================================\nFAIL: test_crlf (test_io.IOTest)\n" +
				"----------------------------------------------------------------------\nTraceback (most recent call last):\n" +
				"  File \"/home/u/proj/test_io.py\", line 12, in test_crlf\n    self.assertEqual(read(), 'foo\\nbar')\n" +
				"AssertionError: 'foo\\r\\nbar' != 'foo\\nbar'\n- foo\n?    -\n+ foo\n  bar\n\n" +
				"----------------------------------------------------------------------\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n",
			`1 failed: test_crlf (/home/u/proj/test_io.py:12: AssertionError: 'foo\r\nbar' != 'foo\nbar')`,
		},
		{
			// cargo without a C linker: the linker's line, not cargo's trailer about the crate.
			"cargo, no linker",
			"   Compiling proc-macro2 v1.0.86\nerror: linker `cc` not found\n  |\n  = note: No such file or directory (os error 2)\n\nerror: could not compile `proc-macro2` (build script) due to 1 previous error\n",
			"does not build: error: linker `cc` not found",
		},
		{
			// `bin/rails db:migrate && git diff --exit-code db/schema.rb`: git prints the diff and
			// nothing else; its last line is a line of the schema.
			"a clean-tree check, the diff alone",
			"== 20261205031500 AddIndexToUsersEmail: migrating =======\n-- add_index(:users, :email)\n\ndiff --git a/db/schema.rb b/db/schema.rb\nindex 3b1f2c0..9e4d7a1 100644\n--- a/db/schema.rb\n+++ b/db/schema.rb\n@@ -40,5 +40,6 @@\n     t.string \"email\", null: false\n+    t.index [\"email\"], name: \"index_users_on_email\"\n   end\n end\n",
			"it printed a diff of db/schema.rb",
		},
	})
}

// summaryCase is a verify's output (out) and the summary its failure records (want).
type summaryCase struct{ name, out, want string }

func testSummaries(t *testing.T, cases []summaryCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.TrimPrefix(verifySummary([]byte(c.out)), ": "); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
