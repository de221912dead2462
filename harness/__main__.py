from harness.entry import main

raise SystemExit(main())
