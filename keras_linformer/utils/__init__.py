"""What the library and its programs share: argument validation, program conventions."""
