"""`python -m training.query` in a checkout: runs `keras_linformer.programs.query`.

Installed, the same program is `keras-linformer-query` or
`python -m keras_linformer.programs.query`, from any directory.
"""

import sys

from keras_linformer.programs.query import main

if __name__ == "__main__":
    sys.exit(main())
