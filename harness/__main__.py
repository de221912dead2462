from harness.cli.entry import main

raise SystemExit(main())
