"""The peer: what a user would write to turn a detailed vLLM result into Parquet (15 lines).

python benchmarks/peer_pandas_import.py RESULT.json OUT_DIR
"""

import json
import sys
from pathlib import Path

import pandas as pd

src, out = Path(sys.argv[1]), Path(sys.argv[2])
d = json.loads(src.read_text())
out.mkdir(parents=True, exist_ok=True)
keys = ["input_lens", "output_lens", "ttfts", "latencies", "start_times", "errors"]
req = pd.DataFrame({k: d[k] for k in keys})
itl = pd.DataFrame({"itl_s": d["itls"]}).explode("itl_s", ignore_index=False)
itl = itl.reset_index(names="request").astype({"itl_s": "float64"})
req.to_parquet(out / "requests.parquet")
itl.to_parquet(out / "itl.parquet")
print(f"wrote {out}: {len(req)} requests, {len(itl)} gaps")
