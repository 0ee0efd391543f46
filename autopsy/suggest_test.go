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
