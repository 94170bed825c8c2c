"""The README's Python example runs as written."""

import os
import re
import subprocess
import sys


def test_readme_python_example_runs():
    source_dir = os.environ.get("SIMSYNC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    with open(os.path.join(source_dir, "README.md"), encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python block"
    result = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "0", "33000000", "33", "67000000", "67"]
