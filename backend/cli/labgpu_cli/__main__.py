from labgpu_cli.main import run

run()
