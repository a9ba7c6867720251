#include <secp256k1.h>
#include <secp256k1_recovery.h>
#include <secp256k1_ecdh.h>
