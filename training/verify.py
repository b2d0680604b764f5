"""`python -m training.verify` in a checkout: runs `keras_linformer.programs.verify`.

Installed, the same program is `keras-linformer-verify` or
`python -m keras_linformer.programs.verify`, from any directory.
"""

import sys

from keras_linformer.programs.verify import main

if __name__ == "__main__":
    sys.exit(main())
