from .commands import console_main

console_main()
