#!/usr/bin/env bash
# `make demo`: boot the two demo test hosts (kept running between demos, so a second run shows
# changed=0) and run the site playbook against inventories/demo.
# LLMSERVE_DEMO_HOSTS_ONLY=1: only boot the hosts (tools/bench/run.sh measures site.yml on them itself).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/hosts/testhosts.sh

# Fixture hardware (the healthy Blackwell tree) and the two wheelhouses are mounted read-only.
fixtures="$LLMSERVE_CACHE/fixtures"
# (make demo materialises the fixture trees into $fixtures first)
mounts=(-v "$fixtures:/opt/llmserve-fixtures:ro"
        -v "$LLMSERVE_CACHE/wheelhouse:/opt/llmserve-wheelhouse:ro"
        -v "$(dirname "$LLMSERVE_SGLANG_MODEL"):/opt/llmserve-models:ro")
# Bump when the mounts or the image change, so existing demo hosts are recreated.
demo_recipe=2

declare -A demo_hosts=([llmserve-demo-debian12]=bookworm [llmserve-demo-debian13]=trixie)
for name in "${!demo_hosts[@]}"; do
  if [ "$(podman inspect -f '{{.State.Running}} {{index .Config.Labels "llmserve-demo-recipe"}}' "$name" 2>/dev/null)" \
       != "true $demo_recipe" ]; then
    podman rm -f "$name" >/dev/null 2>&1 || true
    th_log "starting demo host $name"
    podman run -d --name "$name" --hostname "$name" --systemd=always "${mounts[@]}" \
      --label owner=llmserve-demo --label "llmserve-demo-recipe=$demo_recipe" \
      "$TH_IMAGE_PREFIX:${demo_hosts[$name]}" /sbin/init >/dev/null
  fi
done
for name in "${!demo_hosts[@]}"; do
  for _ in $(seq 1 60); do
    state=$(podman exec "$name" systemctl is-system-running 2>/dev/null || true)
    case "$state" in running|degraded) break ;; esac
    sleep 0.5
  done
done

[ "${LLMSERVE_DEMO_HOSTS_ONLY:-0}" = 1 ] && exit 0
ansible-playbook site.yml -i inventories/demo "$@"
echo "demo hosts stay up for the next run; remove them with: podman rm -f ${!demo_hosts[*]}"
