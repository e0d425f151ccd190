#!/usr/bin/env python3
"""What a release publishes, read from the chart (never typed twice): the image tag the chart pulls
by default (values.yaml image.repository + Chart.yaml appVersion) and the chart's version, checked
against the package version and the git tag. Used by .github/workflows/release.yml.

    python3 scripts/release_versions.py                    # print image=..., chart=..., ...
    python3 scripts/release_versions.py --tag v0.1.0       # exit 1 unless every version agrees
    python3 scripts/release_versions.py --github-output    # append the lines to $GITHUB_OUTPUT
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "charts" / "draftgen"


def versions() -> dict[str, str]:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    app = str(chart["appVersion"])
    repository = values["image"]["repository"]
    return {
        "image": f"{repository}:{app}",
        "image_repository": repository,
        "app_version": app,
        "chart_name": chart["name"],
        "chart_version": str(chart["version"]),
        "package_version": tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
            "version"
        ],
        # ghcr.io/OWNER/draftgen -> oci://ghcr.io/OWNER/charts: the chart beside the image.
        "chart_registry": "oci://" + repository.rsplit("/", 1)[0] + "/charts",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tag", help="the git tag being released (vX.Y.Z)")
    ap.add_argument("--github-output", action="store_true")
    args = ap.parse_args(argv)
    v = versions()
    problems = []
    if v["package_version"] != v["app_version"]:
        problems.append(
            f"pyproject.toml version {v['package_version']} != Chart.yaml appVersion "
            f"{v['app_version']}"
        )
    if args.tag is not None and args.tag.removeprefix("v") != v["app_version"]:
        problems.append(f"tag {args.tag} != Chart.yaml appVersion {v['app_version']}")
    for p in problems:
        print(f"release_versions: {p}", file=sys.stderr)
    lines = [f"{k}={val}" for k, val in v.items()]
    print("\n".join(lines))
    if args.github_output:
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
