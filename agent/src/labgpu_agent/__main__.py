from labgpu_agent.cli import main

raise SystemExit(main())
