from deltap.cli import main

main()
