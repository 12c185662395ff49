# Sourced by .ci/setup and .ci/lock: uv, pinned, installed from the package index into .venv-uv (its own
# small environment, so that syncing .venv never removes it), and where torch's CPU wheel is found.
UV_PINNED=0.13.9
if [ "$(.venv-uv/bin/uv --version 2>/dev/null)" != "uv $UV_PINNED" ]; then
  "${PYTHON:-python3}" -m venv .venv-uv
  .venv-uv/bin/python -m pip install -q "uv==$UV_PINNED"
fi
UV=$PWD/.venv-uv/bin/uv
# pip's find-links (this machine's CPU wheels: PIP_FIND_LINKS, else pip's configuration files) serve uv
# too, unless UV_FIND_LINKS says otherwise
if [ -z "${UV_FIND_LINKS:-}" ]; then
  links=${PIP_FIND_LINKS:-$("${PYTHON:-python3}" -m pip config get global.find-links 2>/dev/null || true)}
  if [ -n "$links" ]; then
    export UV_FIND_LINKS=$links
  fi
fi
