"""How long the page's one import of plotly.js blocks it: plotly.py's whole bundle against the "basic" bundle
cepkit ships (``cepkit.widgets.figures.PLOTLY_BUNDLE``), imported the way ``PlotlyView`` imports it (a Blob-URL
module) in headless Chromium, each in a fresh page, alternating. The whole bundle is the baseline of the same run.

    python bench/plotly_import.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import plotly
from playwright.sync_api import sync_playwright
from tqdm.auto import tqdm

from cepkit.widgets.figures import PLOTLY_BUNDLE

CHROMIUM = "/usr/bin/chromium"
IMPORT = """async (source) => {
    const url = URL.createObjectURL(new Blob(["const module = {exports: {}};\\n", source,
        "\\nexport default module.exports;\\n"], {type: "text/javascript"}));
    const start = performance.now();
    const plotly = (await import(url)).default;
    return [performance.now() - start, typeof plotly.react]; }"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bundles = {
        "whole (plotly.py)": Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
        "basic (cepkit)": PLOTLY_BUNDLE,
    }
    sources = {name: path.read_text() for name, path in bundles.items()}
    times: dict = {name: [] for name in bundles}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        for _ in tqdm(range(args.repeat), desc="imports"):
            for name, source in sources.items():
                page = browser.new_page()
                ms, react = page.evaluate(IMPORT, source)
                assert react == "function", f"{name} gave no Plotly.react"
                times[name].append(ms)
                page.close()
        browser.close()
    print(f"{'bundle':<18} {'MB':>5} {'median ms':>10}  all ms")
    for name, path in bundles.items():
        print(
            f"{name:<18} {path.stat().st_size / 1e6:5.1f} {statistics.median(times[name]):10.0f}  "
            f"{[round(t) for t in times[name]]}"
        )
    whole, basic = (statistics.median(t) for t in times.values())
    print(f"whole / basic: {whole / basic:.1f}x")


if __name__ == "__main__":
    main()
