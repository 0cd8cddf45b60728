// placeholder until the loader lands
namespace esi::esm {}
