-- 0008: the agent CLI's own session of an attempt (claude's session_id, codex's thread_id,
-- gemini's session_id) and the command that continues that conversation by hand, as the
-- preset knows it ('' where the CLI reported none or cannot resume).
ALTER TABLE attempts ADD COLUMN agent_session TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN agent_resume TEXT NOT NULL DEFAULT '';
