-- 0010: the lane of an attempt that raced others of its task (`best_of: N`, SPEC §4.1): 1…N,
-- 0 for an attempt that raced no one.
ALTER TABLE attempts ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
