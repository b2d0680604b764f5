"""`python -m training.export` in a checkout: runs `keras_linformer.programs.export`.

Installed, the same program is `keras-linformer-export` or
`python -m keras_linformer.programs.export`, from any directory.
"""

import sys

from keras_linformer.programs.export import main

if __name__ == "__main__":
    sys.exit(main())
