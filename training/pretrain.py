"""`python -m training.pretrain` in a checkout: runs `keras_linformer.programs.pretrain`.

Installed, the same program is `keras-linformer-pretrain` or
`python -m keras_linformer.programs.pretrain`, from any directory.
"""

import sys

from keras_linformer.programs.pretrain import main

if __name__ == "__main__":
    sys.exit(main())
