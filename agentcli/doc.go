// Package agentcli is what mulligan knows of the agent CLIs it runs: each preset's command, its
// environment and install hint, and how to read what the CLI printed — its result and usage, its
// session id, its failure banners and exit codes (classification into SPEC §4's classes), quota
// reset times, the payload checks of an exit 0, and the fingerprint of a failure.
//
// It reads output and decides nothing: retrying, failing over, parking and recording belong to
// package attempt, reports to package autopsy; both import this one. It never runs a process
// and never touches the store or the working tree.
package agentcli
