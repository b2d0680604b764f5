"""`python -m training.launch` in a checkout: runs `keras_linformer.programs.launch`.

Installed, the same program is `keras-linformer-launch` or
`python -m keras_linformer.programs.launch`, from any directory.
"""

import sys

from keras_linformer.programs.launch import main

if __name__ == "__main__":
    sys.exit(main())
