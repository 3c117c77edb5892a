from locus.cli import main

raise SystemExit(main())
