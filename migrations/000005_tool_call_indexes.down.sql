DROP INDEX IF EXISTS tool_calls_result_idx;
DROP INDEX IF EXISTS tool_calls_request_idx;
