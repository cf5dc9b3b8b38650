#!/bin/sh
# Re-records replay.jsonl from the scripted LLM (run from the repository root after a prompt change).
set -e
rm -f examples/agent/replay.jsonl
target/release/ptc agent "$(cat examples/agent/mission.txt)" \
  --context examples/shop.json --tools examples/shop_tools.json \
  --signature '{customer :string, revenue :float, _order_ids [:int]}' \
  --llm-cmd examples/agent/scripted_llm.sh --record examples/agent/replay.jsonl
