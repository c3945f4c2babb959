#!/usr/bin/env bash
# A fake AI agent for the Agent Trees demo. It prints progress like an agent CLI and starts the kinds of
# helpers real agents leave behind when they are stopped, time out or lose their editor:
#   - a background loop in its own process group (`sleep` in a subshell, like a dev server or watcher),
#   - a daemon that leaves the session and is re-parented to PID 1 (`setsid -f`),
#   - an MCP-server-like child talking JSON-RPC over stdin/stdout, that ignores SIGHUP and SIGTERM.
# Then it works for a while and exits, leaving all three running: Agent Trees must reap them.
# Usage: bash demo/agent.sh [seconds of work, default 45]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work_seconds="${1:-45}"
say() { echo "[demo-agent $(date +%H:%M:%S)] $*"; }

say "starting (pid $$, process group $(ps -o pgid= -p $$ | tr -d ' '))"

# 1. A background helper loop in a process group of its own.
set -m
( while true; do sleep 5; done ) &
loop_pid=$!
set +m
say "started a background helper loop (pid $loop_pid, own process group)"

# 2. A daemon that escapes the process group and the session, re-parented to PID 1.
setsid -f bash -c 'exec -a demo-agent-daemon sleep 100000' </dev/null >/dev/null 2>&1
say "started a daemon with setsid -f (re-parented to PID 1)"

# 3. An MCP-server-like child on a pipe.
coproc MCP { exec node "$here/fake-mcp-server.js"; }
say "started an MCP server (pid $MCP_PID)"
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"demo-agent"}}}' >&"${MCP[1]}"
IFS= read -r -t 10 reply <&"${MCP[0]}" && say "MCP server answered: $reply"
echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&"${MCP[1]}"
IFS= read -r -t 10 reply <&"${MCP[0]}" && say "MCP server answered: $reply"

steps=("reading the repository" "planning the change" "editing src/ files" "running the tests" "fixing a failing test" "writing the summary")
per_step=$(( work_seconds / ${#steps[@]} ))
((per_step < 1)) && per_step=1
for i in "${!steps[@]}"; do
  say "step $((i + 1))/${#steps[@]}: ${steps[$i]}..."
  sleep "$per_step"
done
say "done; exiting and leaving the helpers behind (loop $loop_pid, the daemon, MCP server $MCP_PID)"
exit 0
