// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-rawusb [-c CLASS:SUBCLASS:PROTOCOL] [-e IN:OUT] [-t SECONDS] VID:PID: pose as a simple high-speed USB
 * device through USB Raw Gadget (drivers/usb/gadget/legacy/raw_gadget.c) on the dummy_hcd UDC,
 * so that a host-side driver of the same guest (usbtmc, ftdi-elan, udlfb...) binds to it.
 * One configuration, interface 0 of the given class (default ff:00:00) with a bulk OUT
 * endpoint 0x01 and a bulk IN endpoint 0x82 (dummy_hcd's ep1out-bulk and ep2in-bulk), or
 * the addresses -e gives (dummy_hcd has bulk endpoints 1, 2, 6, 7, 11 and 12 each way).
 * The main loop fetches events with USB_RAW_IOCTL_EVENT_FETCH (each fetch takes
 * raw_event_queue.sema) and answers the standard control requests; class and vendor requests
 * get zeroes or an ack, unknown descriptors a stall.  After SET_CONFIGURATION a thread sinks
 * what the host sends to the OUT endpoint; nothing is ever sent on the IN endpoint.
 * Prints KTAP diagnostic lines; exits 0 after SECONDS (default 20), 1 on an error.
 */
#include <asm/byteorder.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/usb/ch9.h>
#include <linux/usb/raw_gadget.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* By type: 6.1 queues only CONNECT and CONTROL, later kernels also SUSPEND..DISCONNECT */
static const char *const event_names[] = {
	"invalid", "connect", "control", "suspend", "resume", "reset", "disconnect", "unknown"
};

static const char *const strings[] = { "sem2mutex", "s2m raw gadget", "0001" };

static struct usb_device_descriptor dev_desc = {
	.bLength = USB_DT_DEVICE_SIZE, .bDescriptorType = USB_DT_DEVICE,
	.bcdUSB = __cpu_to_le16(0x0200), .bMaxPacketSize0 = 64, .bcdDevice = __cpu_to_le16(0x0100),
	.iManufacturer = 1, .iProduct = 2, .iSerialNumber = 3, .bNumConfigurations = 1,
};

static struct usb_qualifier_descriptor qual_desc = {
	.bLength = sizeof(struct usb_qualifier_descriptor),
	.bDescriptorType = USB_DT_DEVICE_QUALIFIER,
	.bcdUSB = __cpu_to_le16(0x0200), .bMaxPacketSize0 = 64, .bNumConfigurations = 1,
};

#define CONFIG_LEN (USB_DT_CONFIG_SIZE + USB_DT_INTERFACE_SIZE + 2 * USB_DT_ENDPOINT_SIZE)

static struct usb_config_descriptor config_desc = {
	.bLength = USB_DT_CONFIG_SIZE, .bDescriptorType = USB_DT_CONFIG,
	.wTotalLength = __cpu_to_le16(CONFIG_LEN), .bNumInterfaces = 1, .bConfigurationValue = 1,
	.bmAttributes = USB_CONFIG_ATT_ONE | USB_CONFIG_ATT_SELFPOWER, .bMaxPower = 50, /* 100 mA */
};

static struct usb_interface_descriptor intf_desc = {
	.bLength = USB_DT_INTERFACE_SIZE, .bDescriptorType = USB_DT_INTERFACE, .bNumEndpoints = 2,
};

/* dummy_hcd's ep1out-bulk and ep2in-bulk; high speed bulk takes 512-byte packets only */
static struct usb_endpoint_descriptor ep_desc[2] = {
	{ .bLength = USB_DT_ENDPOINT_SIZE, .bDescriptorType = USB_DT_ENDPOINT,
	  .bEndpointAddress = USB_DIR_OUT | 1, .bmAttributes = USB_ENDPOINT_XFER_BULK,
	  .wMaxPacketSize = __cpu_to_le16(512) },
	{ .bLength = USB_DT_ENDPOINT_SIZE, .bDescriptorType = USB_DT_ENDPOINT,
	  .bEndpointAddress = USB_DIR_IN | 2, .bmAttributes = USB_ENDPOINT_XFER_BULK,
	  .wMaxPacketSize = __cpu_to_le16(512) },
};

static struct {
	struct usb_raw_ep_io io;
	unsigned char data[65536];
} ep0;

static int fd, ep_out = -1, ep_in = -1, configured, answered, stalled, failed;
static int sink_running;			/* shared with the sink thread: __atomic */
static unsigned long sunk;			/* idem */
static volatile sig_atomic_t stop;
static long time_limit = 20;			/* seconds */

static void fail(const char *what)
{
	printf("# s2m-rawusb: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_alarm(int sig)
{
	stop = 1;
}

/*
 * alarm() needs CONFIG_POSIX_TIMERS, which a tinyconfig kernel does not have: this
 * thread sleeps instead, then interrupts the main loop's blocking ioctl with SIGALRM,
 * once a second, should a signal land just before one.
 */
static void *timer_thread(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;

	sleep(time_limit);
	for (;;) {
		stop = 1;
		pthread_kill(main_thread, SIGALRM);
		sleep(1);
	}
	return NULL;
}

/* Not fatal (the host may have given up on the request); the first ones are shown */
static void ep0_failed(const struct usb_ctrlrequest *c)
{
	if (!stop && ++failed <= 3)
		printf("# s2m-rawusb: request %02x %02x %04x: %s\n", c->bRequestType, c->bRequest,
		       __le16_to_cpu(c->wValue), strerror(errno));
}

/* The data stage: IN requests with a wLength get up to len bytes (zeroes without data). */
static void reply(const struct usb_ctrlrequest *c, const void *data, int len)
{
	int in = (c->bRequestType & USB_DIR_IN) && c->wLength;
	int wlength = __le16_to_cpu(c->wLength);

	ep0.io.ep = 0;
	ep0.io.length = in && len < wlength ? len : wlength;
	ep0.io.flags = ep0.io.length < wlength ? USB_RAW_IO_FLAGS_ZERO : 0;
	memset(ep0.data, 0, ep0.io.length);
	if (in && data)
		memcpy(ep0.data, data, ep0.io.length);
	/* raw_gadget expects EP0_READ for OUT requests and for IN ones without data */
	if (ioctl(fd, in ? USB_RAW_IOCTL_EP0_WRITE : USB_RAW_IOCTL_EP0_READ, &ep0) >= 0)
		answered++;
	else
		ep0_failed(c);
}

static void stall(const struct usb_ctrlrequest *c)
{
	if (ioctl(fd, USB_RAW_IOCTL_EP0_STALL, 0) < 0)
		ep0_failed(c);
	else if (++stalled <= 3)
		printf("# s2m-rawusb: stalled request %02x %02x %04x\n", c->bRequestType,
		       c->bRequest, __le16_to_cpu(c->wValue));
}

static void *sink_thread(void *arg)
{
	struct {
		struct usb_raw_ep_io io;
		unsigned char data[4096];
	} buf;
	int n;

	for (;;) {
		buf.io.ep = ep_out;
		buf.io.flags = 0;
		buf.io.length = sizeof(buf.data);
		n = ioctl(fd, USB_RAW_IOCTL_EP_READ, &buf);
		if (n < 0)
			break;
		__atomic_add_fetch(&sunk, n, __ATOMIC_RELAXED);
	}
	printf("# s2m-rawusb: OUT endpoint sink ended: %s\n", strerror(errno));
	__atomic_store_n(&sink_running, 0, __ATOMIC_RELEASE);
	return NULL;
}

static void set_configuration(const struct usb_ctrlrequest *c)
{
	sigset_t alrm, old;
	pthread_t thread;

	configured = __le16_to_cpu(c->wValue) & 0xff;
	if (!configured) {	/* back to the address state, the endpoints left as they are */
		reply(c, NULL, 0);
		return;
	}
	/* once: they stay enabled across resets, another EP_ENABLE would find none free */
	if (ep_out < 0) {
		ep_out = ioctl(fd, USB_RAW_IOCTL_EP_ENABLE, &ep_desc[0]);
		if (ep_out < 0)
			fail("USB_RAW_IOCTL_EP_ENABLE (OUT)");
		ep_in = ioctl(fd, USB_RAW_IOCTL_EP_ENABLE, &ep_desc[1]);
		if (ep_in < 0)
			fail("USB_RAW_IOCTL_EP_ENABLE (IN)");
	}
	if (ioctl(fd, USB_RAW_IOCTL_VBUS_DRAW, config_desc.bMaxPower) < 0)
		fail("USB_RAW_IOCTL_VBUS_DRAW");
	if (ioctl(fd, USB_RAW_IOCTL_CONFIGURE, 0) < 0)
		fail("USB_RAW_IOCTL_CONFIGURE");
	reply(c, NULL, 0);
	if (__atomic_load_n(&sink_running, __ATOMIC_ACQUIRE))
		return;
	printf("# s2m-rawusb: configured, endpoint handles %d (out) %d (in), sink started\n",
	       ep_out, ep_in);
	/* the thread inherits a blocked SIGALRM: the alarm must interrupt the main loop */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	__atomic_store_n(&sink_running, 1, __ATOMIC_RELAXED);
	errno = pthread_create(&thread, NULL, sink_thread, NULL);
	if (errno)
		fail("pthread_create");
	pthread_detach(thread);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void get_descriptor(const struct usb_ctrlrequest *c)
{
	unsigned char buf[256];
	int type = __le16_to_cpu(c->wValue) >> 8, index = __le16_to_cpu(c->wValue) & 0xff;
	int i, len = 2;

	switch (type) {
	case USB_DT_DEVICE:
		reply(c, &dev_desc, sizeof(dev_desc));
		break;
	case USB_DT_DEVICE_QUALIFIER:
		reply(c, &qual_desc, sizeof(qual_desc));
		break;
	case USB_DT_CONFIG:
		/* struct usb_endpoint_descriptor has 2 audio bytes more than the wire format */
		memcpy(buf, &config_desc, USB_DT_CONFIG_SIZE);
		memcpy(buf + USB_DT_CONFIG_SIZE, &intf_desc, USB_DT_INTERFACE_SIZE);
		len = USB_DT_CONFIG_SIZE + USB_DT_INTERFACE_SIZE;
		for (i = 0; i < 2; i++, len += USB_DT_ENDPOINT_SIZE)
			memcpy(buf + len, &ep_desc[i], USB_DT_ENDPOINT_SIZE);
		reply(c, buf, len);
		break;
	case USB_DT_STRING:
		if (index > 3) {
			stall(c);
			break;
		}
		if (index == 0) {
			buf[len++] = 0x09;	/* English (US): 0x0409 */
			buf[len++] = 0x04;
		}
		for (i = 0; index && strings[index - 1][i]; i++) {
			buf[len++] = strings[index - 1][i];	/* UTF-16LE of ASCII */
			buf[len++] = 0;
		}
		buf[0] = len;
		buf[1] = USB_DT_STRING;
		reply(c, buf, len);
		break;
	default:
		stall(c);	/* BOS, other speed configuration, vendor descriptors... */
	}
}

static void control(const struct usb_ctrlrequest *c)
{
	unsigned char value = configured;

	if ((c->bRequestType & USB_TYPE_MASK) != USB_TYPE_STANDARD)
		reply(c, NULL, __le16_to_cpu(c->wLength));
	else if (c->bRequest == USB_REQ_GET_DESCRIPTOR)
		get_descriptor(c);
	else if (c->bRequest == USB_REQ_SET_CONFIGURATION)
		set_configuration(c);
	else if (c->bRequest == USB_REQ_GET_CONFIGURATION)
		reply(c, &value, 1);
	else if (c->bRequest == USB_REQ_GET_STATUS)
		reply(c, NULL, 2);
	else
		reply(c, NULL, __le16_to_cpu(c->wLength));	/* SET_INTERFACE, features... */
}

static void usage(FILE *f, int status)
{
	fprintf(f, "Usage: s2m-rawusb [-c CLASS:SUBCLASS:PROTOCOL] [-e IN:OUT] [-t SECONDS] VID:PID\n"
		"Pose as USB device VID:PID (hex) through /dev/raw-gadget on dummy_udc.0 for\n"
		"SECONDS (default 20), interface class CLASS:SUBCLASS:PROTOCOL (hex, default\n"
		"ff:00:00), bulk endpoints IN:OUT (hex addresses, default 82:01).\n"
		"Example: s2m-rawusb -c fe:03:01 -t 20 0957:1755\n");
	exit(status);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	struct {
		struct usb_raw_event ev;
		struct usb_ctrlrequest ctrl;
	} e;
	unsigned int vid, pid, cls = 0xff, sub = 0, proto = 0, seen = 0, type, events = 0;
	unsigned int in = USB_DIR_IN | 2, out = USB_DIR_OUT | 1;
	struct usb_raw_init init = { .speed = USB_SPEED_HIGH };
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	pthread_t self = pthread_self(), timer;
	char *end, c;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:e:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (sscanf(optarg, "%x:%x:%x%c", &cls, &sub, &proto, &c) != 3 ||
			    cls > 0xff || sub > 0xff || proto > 0xff)
				usage(stderr, 2);
			break;
		case 'e':
			if (sscanf(optarg, "%x:%x%c", &in, &out, &c) != 2 || in < 0x81 ||
			    in > 0x8f || out < 0x01 || out > 0x0f)
				usage(stderr, 2);
			break;
		case 't':
			time_limit = strtol(optarg, &end, 10);
			if (time_limit <= 0 || time_limit > 86400 || *end)
				usage(stderr, 2);
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc - 1 || sscanf(argv[optind], "%x:%x%c", &vid, &pid, &c) != 2 ||
	    vid > 0xffff || pid > 0xffff)
		usage(stderr, 2);
	ep_desc[0].bEndpointAddress = out;
	ep_desc[1].bEndpointAddress = in;
	dev_desc.idVendor = __cpu_to_le16(vid);
	dev_desc.idProduct = __cpu_to_le16(pid);
	intf_desc.bInterfaceClass = cls;
	intf_desc.bInterfaceSubClass = sub;
	intf_desc.bInterfaceProtocol = proto;
	setvbuf(stdout, NULL, _IOLBF, 0);

	fd = open("/dev/raw-gadget", O_RDWR);
	if (fd < 0)
		fail("/dev/raw-gadget");
	strcpy((char *)init.driver_name, "dummy_udc");
	strcpy((char *)init.device_name, "dummy_udc.0");
	if (ioctl(fd, USB_RAW_IOCTL_INIT, &init) < 0)
		fail("USB_RAW_IOCTL_INIT");
	if (ioctl(fd, USB_RAW_IOCTL_RUN, 0) < 0)
		fail("USB_RAW_IOCTL_RUN dummy_udc.0");
	sigaction(SIGALRM, &sa, NULL);
	errno = pthread_create(&timer, NULL, timer_thread, &self);
	if (errno)
		fail("pthread_create");

	while (!stop) {
		e.ev.type = 0;
		e.ev.length = sizeof(e.ctrl);
		if (ioctl(fd, USB_RAW_IOCTL_EVENT_FETCH, &e) < 0) {
			if (errno == EINTR)
				continue;
			fail("USB_RAW_IOCTL_EVENT_FETCH");
		}
		events++;
		type = e.ev.type < 7 ? e.ev.type : 7;	/* "unknown" */
		if (!(seen & 1 << type))
			printf("# s2m-rawusb: first %s event\n", event_names[type]);
		seen |= 1 << type;
		if (type == USB_RAW_EVENT_CONTROL && e.ev.length >= sizeof(e.ctrl))
			control(&e.ctrl);
	}

	if (failed)
		printf("# s2m-rawusb: %d control requests failed\n", failed);
	printf("# s2m-rawusb: %04x:%04x %02x:%02x:%02x: %u events, %d control requests answered, "
	       "%d stalled, %lu bytes sunk in %ld s\n", vid, pid, cls, sub, proto, events, answered,
	       stalled, __atomic_load_n(&sunk, __ATOMIC_RELAXED), time_limit);
	return 0;
}
