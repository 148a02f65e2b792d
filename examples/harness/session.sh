#!/bin/sh
# A three-turn agent session against a workspace cowfs has mounted, driven
# over the control socket with curl and jq, as any harness would. The user
# then rejects turns 2 and 3: the workspace is rolled back to before turn 2
# and the marker says where to truncate the conversation.
#
# Usage: session.sh WORKSPACE      (after: cowfs mount --background WORKSPACE)
set -eu
WS=${1:?usage: session.sh WORKSPACE}
# A reply goes into a variable before jq reads it: sh has no pipefail, so
# in `cowfs … | jq` or `api … | jq` a failed request would go unnoticed.
status=$(cowfs -w "$WS" status --json)
SOCK=$(printf '%s\n' "$status" | jq -r .socket)

# api METHOD PATH [curl args]: one request to the daemon; fails on an error
# reply, printing its {"error": {"code", "message"}}.
api() {
	method=$1 path=$2
	shift 2
	curl -sS --fail-with-body --unix-socket "$SOCK" -X "$method" "http://cowfs$path" "$@"
}

# turn ID ANCHOR SCRIPT: one user prompt and the agent's answer, a shell
# tool call here. The anchor is the user message's id.
turn() {
	id=$1 anchor=$2 script=$3
	api POST /v1/turns -d "{\"id\": \"$id\", \"anchor\": \"$anchor\"}" >/dev/null
	api POST /v1/turns/current/steps -d "{\"id\": \"$id-bash\"}" >/dev/null
	(cd "$WS" && sh -c "$script")
	ended=$(api POST /v1/turns/current/end)
	printf '%s\n' "$ended" | jq -c '{turn: .num, id, changed_paths}'
}

turn call-1 msg-1 'printf "print(\"hello\")\n" > app.py && mkdir -p tests && printf "def test_app(): pass\n" > tests/test_app.py'
turn call-2 msg-2 'sed -i "s/hello/hello, world/" app.py && printf "# notes\n" > NOTES.md'
turn call-3 msg-3 'rm -rf tests && printf "broken\n" > app.py'

echo "turn 3 changed:"
turn3=$(api GET /v1/turns/call-3)
printf '%s\n' "$turn3" | jq -r '.changes[] | "  \(.kind) \(.path) by \(.command) (pid \(.pid))"'
echo "what turn 3 did to app.py:"
diff=$(api GET '/v1/diff?from=call-3')
printf '%s\n' "$diff" | jq -r '.files[] | select(.path == "app.py") | .diff'

echo "the user rejects turns 2 and 3; rolling back to before turn 2:"
rollback=$(api POST /v1/rollback -d '{"to": "call-2"}')
printf '%s\n' "$rollback" | jq -c .counts
markers=$(api GET /v1/markers)
marker=$(printf '%s\n' "$markers" | jq -c '.markers[-1]')
echo "marker: $marker"
echo "truncate the conversation from message $(printf '%s\n' "$marker" | jq -r .anchor) on"
echo "app.py is back to:"
cat "$WS/app.py"
