// Package attempt runs agents: the retry and failover policy, the runner, quota parking,
// output checks, verify and the operator's actions. The task file it runs is package taskfile's model; the history it writes is
// package store's; what an agent CLI's output means (presets, classification) is package
// agentcli's.
//
// It must never run the git binary (snapshots go through package snapshot) and never
// pass agent commands through a shell: argv elements are templated one by one.
package attempt
