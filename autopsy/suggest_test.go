package autopsy

import "testing"

// keyVar names the variable an authentication error is about, for CLIs without a sign-in
// command (aider through litellm, a generic command).
func TestKeyVar(t *testing.T) {
	for msg, want := range map[string]string{
		// Aider-AI/aider: litellm's words for an organisation header the key does not belong to.
		"aider: litellm.AuthenticationError: AuthenticationError: OpenAIException - OpenAI-Organization header should match organization for API key": "OPENAI_ORGANIZATION",
		"litellm.AuthenticationError: AnthropicException - invalid x-api-key":                                                                         "ANTHROPIC_API_KEY",
		"Error: DEEPSEEK_API_KEY is not valid": "DEEPSEEK_API_KEY",
		"agent exited with status 1":           "",
	} {
		if got := keyVar(msg); got != want {
			t.Errorf("keyVar(%q) = %q, want %q", msg, got, want)
		}
	}
}

// The tools' own words for a login this machine lacks, and the first step they take.
func TestLoginLines(t *testing.T) {
	for line, fix := range map[string]string{
		// pypa/pip: a private index refusing the machine's credentials.
		"WARNING: 401 Error, Credentials not correct for https://pypi.acme-corp.internal/simple/acme-billing/": "${EDITOR:-vi} ~/.netrc  # the login and token for pypi.acme-corp.internal",
		// aws-sdk-go-v2: an SSO session whose token can no longer be refreshed.
		"operation error DynamoDB: Query, get identity: get credentials: failed to refresh cached credentials, refresh cached SSO token failed, unable to refresh SSO token": "aws sso login",
		// rust-lang/cargo: libgit2 with no ssh-agent to ask.
		"  * attempted ssh-agent authentication, but no usernames succeeded: `git`": "ssh-add -l",
		// googleapis/google-auth-library-python.
		"google.auth.exceptions.DefaultCredentialsError: Your default credentials were not found. To set up Application Default Credentials, see https://cloud.google.com/docs/authentication/external/set-up-adc": "gcloud auth application-default login",
		// serverless/serverless#12534: v4 asks for a login in its own words.
		`Error: You must sign in or use a license key with Serverless Framework V.4 and later versions. Please use "serverless login".`: "serverless login",
		// chromaui/chromatic-cli's missingProjectToken.
		"✖ Missing project token": "export CHROMATIC_PROJECT_TOKEN=...  # the project's token from chromatic.com",
		// NuGet/Home#12217: .NET's HttpClient under the NU1301 line.
		"  Response status code does not indicate success: 401 (Unauthorized).": "${EDITOR:-vi} ~/.nuget/NuGet/NuGet.Config  # a valid token (PAT) for the feed",
		// huggingface/transformers: a gated model, no token.
		"E   Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json.": "huggingface-cli login",
	} {
		if k, ok := scanLacks(line, loginRes); !ok || k.fix != fix {
			t.Errorf("scanLacks(%q) = %+v %v, want %s", line, k, ok, fix)
		}
	}
}
