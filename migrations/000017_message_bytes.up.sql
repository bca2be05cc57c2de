-- What a stored message takes as Parley reads it (its text, calls, results, payload and
-- provenance, the jsonb columns as text), kept by Postgres itself on every insert and
-- update. A page read stops at the response's byte budget (--max-page-bytes) inside the
-- statement: a running sum of body_bytes over the page's rows, an integer in the row, so
-- the rows past the budget are neither detoasted nor sent (db/pagebudget.go).
-- Adding a stored generated column rewrites the table once.
ALTER TABLE messages ADD COLUMN body_bytes integer GENERATED ALWAYS AS (
    octet_length(content)
    + coalesce(octet_length(tool_calls::text), 0)
    + coalesce(octet_length(tool_results::text), 0)
    + octet_length(payload::text)
    + coalesce(octet_length(provenance::text), 0)
) STORED;
