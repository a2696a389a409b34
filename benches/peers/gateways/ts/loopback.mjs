// Preloaded with `node --import`: supergateway 4.0.0 listens with `app.listen(port)`, on every
// interface, and has no option for the address. The benchmark serves 127.0.0.1 only, so a
// listen given a port and no host gets 127.0.0.1; nothing else of the gateway changes.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    if (typeof args[0] === 'number' && (args.length === 1 || typeof args[1] === 'function')) {
        args.splice(1, 0, '127.0.0.1');
    }
    return listen.apply(this, args);
};
