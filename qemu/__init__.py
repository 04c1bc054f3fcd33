"""sem2mutex QEMU boot harness.

Stages, each a function taking a small request dataclass and returning a result with a
status enum and the elapsed time (the shape of KUnit's kunit.py):

    config.configure   tinyconfig + fragments + olddefconfig, "Missing: CONFIG_X=y"
    build.build        bzImage in a persistent O= directory per fragment set (ccache)
    rootfs.make_initramfs  busybox-static + our static helpers + /init, as a newc cpio
    run.run_qemu       qemu-system-x86_64, console teed to a log, timeout from outside
    parse.parse_log    KTAP tree, lockdep/mutex-debug/BUG/Oops/panic/hang reports, verdict

``boot.boot`` only chains them; ``boot.boot_test`` runs the standard scenario set.
"""
