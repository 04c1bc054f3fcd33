#!/bin/busybox sh
# drivers/media/dvb-core/dvb_frontend.c: dvb_frontend_private.sem.  Opening a
# frontend read-write starts its thread: dvb_frontend_start() down()s the
# semaphore and the new thread up()s it ("is locked when we enter the thread"),
# then each wake-up of the thread takes and releases it.  vidtv, the virtual DVB
# driver, gives the frontend.
fe=/dev/dvb/adapter0/frontend0
[ -c $fe ] || { echo "# workload dvb: no $fe"; ls -R /dev/dvb 2>&1 | head; exit 1; }
i=0
while [ $i -lt 3 ]; do
	exec 3<>$fe || exit 1
	sleep 1
	exec 3>&-
	i=$((i + 1))
done
echo "# workload dvb: $fe opened read-write 3 times (the frontend thread started and stopped)"
