from slidewise.cli import main

raise SystemExit(main())
