"""`python -m training.main` in a checkout: runs `keras_linformer.programs.main`.

Installed, the same program is `keras-linformer-main` or
`python -m keras_linformer.programs.main`, from any directory.
"""

import sys

from keras_linformer.programs.main import main

if __name__ == "__main__":
    sys.exit(main())
